#include "verify_util.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "../../libs/verify/src/sys.hpp"
#include "kforge/core/config.hpp"
#include "kforge/verify/config.hpp"

namespace kforge::test {

Status read_verifier(const std::string& yaml, verify::VerifierConfig& c) {
  auto r =
      ConfigReader::load_string(yaml, "k.yaml", [](const std::string&) { return std::nullopt; });
  if (!r.ok()) return r.error();
  verify::read_config((*r)->root().child("verifier"), c);
  return (*r)->finish();
}

nlohmann::json harness_json(const nlohmann::json& fields) {
  nlohmann::json j = {{"harness", verify::harness_report_version()},
                      {"pid", 1},
                      {"verdict", "passed"},
                      {"detail", "1 test passed"},
                      {"phase", "done"}};
  for (const auto& [k, v] : fields.items()) j[k] = v;
  return j;
}

void set_report(verify::VerifyResult& r, const nlohmann::json& fields) {
  r.report = harness_json(fields);
  auto h = verify::parse_harness_report(r.report, verify::ReportOrigin::stored);
  if (!h.ok()) {
    ADD_FAILURE() << h.error().message;
    return;
  }
  r.harness = std::move(*h);
}

verify::VerifyRequest load_sample(const std::string& name,
                                  const std::map<std::string, std::string>& subst,
                                  const std::string& dir) {
  auto base = source_dir() / "tests" / "verify" / dir / name;
  auto load = [&](const char* file) {
    std::string text = read_text(base / file);
    for (const auto& [k, v] : subst) {
      std::string key = "@" + k + "@";
      for (auto p = text.find(key); p != std::string::npos; p = text.find(key, p + v.size()))
        text.replace(p, key.size(), v);
    }
    return text;
  };
  EXPECT_TRUE(std::filesystem::exists(base / "test.py")) << base;
  verify::VerifyRequest r;
  r.key = name;
  r.code = load("code.py");
  r.kernel_wrapper = load("wrapper.py");
  r.unitest_code = load("test.py");
  return r;
}

std::string sandbox_python() {
  if (::access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

int preamble_rss_mb() {
  // The script's preamble imports torch and numpy where the Python has them (assembly.py's
  // PREAMBLE_MODULES): Debian's CPU torch alone holds about 230 MiB. Where torch is not
  // installed (CI) the probe fails and this is 0.
  static const int mb = [] {
    auto r = run_process({sandbox_python(), "-c",
                          "import resource, torch, numpy\n"
                          "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)"},
                         {}, 120);
    if (r.exit_code != 0) return 0;
    try {
      return std::stoi(r.out);
    } catch (const std::exception&) {
      ADD_FAILURE() << "torch imports, but its resident memory cannot be read: " << r.out;
      return 0;
    }
  }();
  return mb;
}

verify::VerifierConfig test_config(const TempDir& dir, const std::string& mode) {
  verify::VerifierConfig c;
  c.devices = {"cpu"};
  c.cpu_workers = 2;
  auto m = value_of(verify::kPoolModeNames, mode);
  EXPECT_TRUE(m.has_value()) << "not a verifier mode: " << mode;
  c.mode = m.value_or(verify::PoolMode::warm);
  c.timeout_s = 2;
  c.python = sandbox_python();
  c.python_path = {(source_dir() / "tests" / "verify" / "fake_triton").string()};
  c.preload = {"triton", "triton.language"};
  // Where torch is installed, warm workers import it once, as config/kforge.yaml's default
  // preload does: imported by each sample's preamble instead, it takes 1.5 s of the deadline.
  if (preamble_rss_mb() > 0) c.preload.insert(c.preload.begin(), {"torch", "numpy"});
  // 200 MiB for the sample, above what the interpreter holds before the sample's code runs.
  c.memory_cap_mb = 200 + preamble_rss_mb();
  c.address_space_cap_mb = 2048;
  c.max_processes = 16;
  c.file_size_cap_mb = 4;
  c.disk_cap_mb = 16;
  c.output_cap_kb = 64;
  c.work_dir = (dir.path() / "work").string();
  c.memory_poll_ms = 20;
  c.worker_start_timeout_s = 30;
  // In submission order (the default, said here because the pool's tests rely on it: they say
  // which sample waits behind which; order_test.cpp tests verifier.order: cost).
  c.order = verify::VerifyOrder::input;
  return c;
}

std::unique_ptr<verify::Pool> make_pool(const verify::VerifierConfig& cfg,
                                        std::vector<verify::Device> devices, Env* env) {
  verify::PoolOptions o;
  o.config = cfg;
  o.devices = std::move(devices);
  o.env = env;
  auto p = verify::Pool::create(o);
  if (!p.ok()) ADD_FAILURE() << p.error().message;
  return p.ok() ? std::move(*p) : nullptr;
}

std::vector<verify::VerifyResult> run_all(verify::Pool& pool,
                                          const std::vector<verify::VerifyRequest>& requests,
                                          const std::function<void(std::size_t)>& after_each) {
  std::vector<verify::VerifyResult> out(requests.size());
  std::size_t done = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    while (!pool.accepting()) pool.step(std::chrono::milliseconds(50));
    auto id = pool.submit(requests[i], [&out, &done, &after_each, i](verify::VerifyResult&& r) {
      out[i] = std::move(r);
      ++done;
      if (after_each) after_each(done);
    });
    EXPECT_TRUE(id.ok());
  }
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (done < requests.size() && std::chrono::steady_clock::now() < give_up)
    pool.step(std::chrono::milliseconds(100));
  EXPECT_EQ(done, requests.size()) << "samples did not finish";
  return out;
}

verify::VerifyResult run_one(verify::Pool& pool, const verify::VerifyRequest& request) {
  return run_all(pool, {request}).at(0);
}

void step_for(verify::Pool& pool, std::chrono::milliseconds total, std::chrono::milliseconds each) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < total) pool.step(each);
}

int count_uid_processes(int uid) {
  int n = 0;
  for (const auto& p : verify::sys::scan_procs())
    if (!p.zombie && (static_cast<int>(p.ruid) == uid || static_cast<int>(p.euid) == uid)) ++n;
  return n;
}

}  // namespace kforge::test
