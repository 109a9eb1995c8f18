#include "slurm_internal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>

#include "kforge/core/fs.hpp"
#include "kforge/verify/store.hpp"

namespace kforge::verify {

namespace slurm {

// Slurm's JobState to the backend's task state; empty while the task has not ended.
std::string task_state(const std::string& s, bool& ended) {
  ended = true;
  if (s == "COMPLETED") return "completed";
  if (s == "CANCELLED") return "cancelled";
  if (s == "TIMEOUT" || s == "DEADLINE") return "timeout";
  if (s == "NODE_FAIL") return "node_fail";
  if (s == "FAILED" || s == "OUT_OF_MEMORY" || s == "BOOT_FAIL" || s == "PREEMPTED")
    return "failed";
  ended = false;
  if (s == "PENDING" || s == "REQUEUED" || s == "REQUEUE_HOLD" || s == "REQUEUE_FED" ||
      s == "CONFIGURING" || s == "RESV_DEL_HOLD")
    return "pending";
  return "running";  // RUNNING, COMPLETING, SUSPENDED, STAGE_OUT, SIGNALING, RESIZING, ...
}

// ArrayTaskId as scontrol prints it: "3", "2-5", "1,3,7-9", "0-99%4", "0-9:2".
std::vector<int> task_ids(std::string s) {
  std::vector<int> out;
  if (auto pct = s.find('%'); pct != std::string::npos) s.resize(pct);
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    int step = 1;
    if (auto colon = part.find(':'); colon != std::string::npos) {
      step = std::max(1, std::atoi(part.c_str() + colon + 1));
      part.resize(colon);
    }
    auto dash = part.find('-');
    int a = std::atoi(part.c_str());
    int b = dash == std::string::npos ? a : std::atoi(part.c_str() + dash + 1);
    for (int i = a; i <= b && out.size() < 100000; i += step) out.push_back(i);
  }
  return out;
}

// One line of `scontrol -o show job`: its Key=value words.
std::map<std::string, std::string> scontrol_fields(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::stringstream words(line);
  std::string w;
  while (words >> w) {
    auto eq = w.find('=');
    if (eq != std::string::npos) kv.emplace(w.substr(0, eq), w.substr(eq + 1));
  }
  return kv;
}

// `scontrol -o show job ARRAYID`: a line per task (pending tasks may share a line).
std::map<int, TaskInfo> parse_scontrol(const std::string& text) {
  std::map<int, TaskInfo> out;
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto kv = scontrol_fields(line);
    if (!kv.count("ArrayTaskId") || !kv.count("JobState")) continue;
    for (int t : task_ids(kv["ArrayTaskId"])) out[t] = {kv["JobState"], kv["ExitCode"]};
  }
  return out;
}

// `scontrol -o show job` (every job slurmctld knows): the array job id of each job whose
// working directory is DIR. Arrays are submitted with --chdir set to their own directory, so the
// directory names the array even when its job id was never recorded.
std::string array_job_in_dir(const std::string& text, const std::string& dir) {
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto kv = scontrol_fields(line);
    if (kv["WorkDir"] != dir) continue;
    const std::string id = kv.count("ArrayJobId") ? kv["ArrayJobId"] : kv["JobId"];
    if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) return id;
  }
  return {};
}

std::string first_line(const std::string& s) {
  auto start = s.find_first_not_of(" \n");
  if (start == std::string::npos) return {};
  auto end = s.find('\n', start);
  return s.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace slurm

}  // namespace kforge::verify
