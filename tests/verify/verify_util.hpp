#pragma once
// Helpers for the verifier tests: sample directories (tests/verify/samples/NAME/{code,wrapper,
// test}.py), a test configuration with hard caps, and running samples to completion.

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kforge/core/env.hpp"
#include "kforge/verify/pool.hpp"
#include "testutil.hpp"

namespace kforge::test {

// Reads `yaml` (file name k.yaml) into `c` as kforge reads its verifier: section, and returns
// what the reader says at the end: the first invalid value, with its line.
Status read_verifier(const std::string& yaml, verify::VerifierConfig& c);

// A report as the harness writes it: the fields report_fields.txt requires (a passing run, this
// kforge's version) with `fields` set on top.
nlohmann::json harness_json(const nlohmann::json& fields = nlohmann::json::object());
// r.report = harness_json(fields) and r.harness its parse (the test fails where it does not
// parse).
void set_report(verify::VerifyResult& r, const nlohmann::json& fields);

// A sample from tests/verify/samples/NAME (or gpu/NAME with dir "gpu"), with @KEY@ replaced.
verify::VerifyRequest load_sample(const std::string& name,
                                  const std::map<std::string, std::string>& subst = {},
                                  const std::string& dir = "samples");

// A Python that users other than root can run (Debian's), else "python3".
std::string sandbox_python();

// What the sandbox Python holds once torch and numpy are imported, in MiB (the preamble of a
// sample's script imports them where installed); 0 where torch is not installed.
int preamble_rss_mb();

// Hard caps for hostile samples on a shared machine: 2 s deadline, 200 MiB resident memory (above
// preamble_rss_mb(): a Python with torch holds more before the sample runs),
// 2 GiB address space, 16 processes, 4 MiB files, a 16 MiB tmpfs, 64 KiB of output kept;
// samples dispatched in submission order (verifier.order: input).
verify::VerifierConfig test_config(const TempDir& dir, const std::string& mode = "warm");

// env: the pool's door to processes (null: the real one); it must outlive the pool.
std::unique_ptr<verify::Pool> make_pool(const verify::VerifierConfig& cfg,
                                        std::vector<verify::Device> devices = {},
                                        Env* env = nullptr);

// Submits each request and steps the pool until all are done; results in request order.
// after_each (if set) runs in each sample's callback with the number done so far.
std::vector<verify::VerifyResult> run_all(verify::Pool& pool,
                                          const std::vector<verify::VerifyRequest>& requests,
                                          const std::function<void(std::size_t)>& after_each = {});
verify::VerifyResult run_one(verify::Pool& pool, const verify::VerifyRequest& request);

// Steps the pool (each step waiting at most `each`) for `total` of real time: what it does
// between samples (spares forked, workers settling) happens meanwhile.
void step_for(verify::Pool& pool, std::chrono::milliseconds total,
              std::chrono::milliseconds each = std::chrono::milliseconds(20));

// Processes (not zombies) whose real or effective uid is uid.
int count_uid_processes(int uid);

}  // namespace kforge::test
