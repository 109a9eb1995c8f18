// The harness spec fails closed: the pool writes exactly the keys of
// harness/kforge_harness/contain/spec_keys.txt (checked here from the C++ side), and the harness,
// a real Python process, refuses a sample whose spec misses one or has one it does not know,
// before any containment step, with an error verdict naming the keys.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "../../libs/verify/src/sandbox.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

namespace fs = std::filesystem;

std::set<std::string> keys_of(const nlohmann::json& spec) {
  std::set<std::string> out;
  for (const auto& [k, v] : spec.items()) out.insert(k);
  return out;
}

TEST(VerifySpecKeys, ThePoolWritesExactlyTheListedKeys) {
  auto listed = verify::spec_keys();
  std::set<std::string> want(listed.begin(), listed.end());
  ASSERT_EQ(want.size(), listed.size()) << "a key is listed twice";
  for (const char* k : {"dir", "max_processes", "max_open_files", "file_size_cap_mb",
                        "address_space_cap_mb", "disk_cap_mb", "cgroup"})
    EXPECT_EQ(want.count(k), 1u) << k;
  TempDir tmp;
  fs::create_directories(tmp / "runs");
  fs::create_directories(tmp / "cache");
  verify::Sandbox::Options o;
  o.config = test_config(tmp);
  o.config.pid_namespace = false;  // nothing about the host is probed: only the spec is built
  o.config.sandbox_uid_base = 0;
  o.python = sandbox_python();
  o.harness = (source_dir() / "libs/verify/harness/kforge-harness.py").string();
  o.run_root = (tmp / "runs").string();
  o.cache_root = (tmp / "cache").string();
  o.slots = 1;
  auto sb = verify::Sandbox::create(o);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  verify::RunPlace plain{(tmp / "runs/s0-1").string(), (tmp / "cache").string(), "", -1};
  EXPECT_EQ(keys_of((*sb)->spec(plain)), want);
  verify::RunPlace confined{(tmp / "runs/s0-2").string(), (tmp / "cache").string(),
                            "/sys/fs/cgroup/kforge/s0", 61000};
  EXPECT_EQ(keys_of((*sb)->spec(confined)), want);
}

// Runs the harness's fresh mode on a request whose sandbox spec is `spec`; its report goes to
// stdout (--result-fd 1).
nlohmann::json fresh_report(const TempDir& tmp, const nlohmann::json& spec, int& exit_code) {
  fs::path req = tmp / "request.json";
  write_text(req, nlohmann::json{{"sandbox", spec}}.dump());
  auto r = run_process(
      {sandbox_python(), (source_dir() / "libs/verify/harness/kforge-harness.py").string(), "fresh",
       "--request", req.string(), "--result-fd", "1"},
      {}, 60);
  exit_code = r.exit_code;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << "stdout: " << r.out << "\nstderr: " << r.err;
  return j;
}

TEST(VerifySpecKeys, TheHarnessRefusesAMissingOrUnknownKey) {
  TempDir tmp;
  nlohmann::json full = nlohmann::json::object();
  for (const auto& k : verify::spec_keys()) full[k] = nullptr;
  full["dir"] = (tmp / "sample").string();

  auto missing = full;
  missing.erase("max_processes");
  missing.erase("address_space_cap_mb");
  int code = 0;
  auto r = fresh_report(tmp, missing, code);
  EXPECT_EQ(code, 3);
  EXPECT_EQ(r.value("verdict", ""), "error") << r.dump();
  EXPECT_EQ(r.value("phase", ""), "sandbox") << r.dump();
  EXPECT_NE(r.value("detail", "").find("missing keys address_space_cap_mb, max_processes"),
            std::string::npos)
      << r.dump();
  EXPECT_FALSE(r.contains("sandbox") && r["sandbox"].contains("rlimits"))
      << "a step ran before the spec was checked: " << r.dump();

  auto unknown = full;
  unknown["max_proceses"] = 16;
  r = fresh_report(tmp, unknown, code);
  EXPECT_EQ(code, 3);
  EXPECT_EQ(r.value("phase", ""), "sandbox") << r.dump();
  EXPECT_NE(r.value("detail", "").find("unknown key max_proceses"), std::string::npos) << r.dump();

  r = fresh_report(tmp, nlohmann::json::array(), code);
  EXPECT_EQ(code, 3);
  EXPECT_NE(r.value("detail", "").find("the sandbox spec is not a JSON object"), std::string::npos)
      << r.dump();
}

}  // namespace
}  // namespace kforge::test
