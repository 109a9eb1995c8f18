#pragma once
// Internal: what the parts of the Slurm backend share. The backend is split by what it does:
//   slurm_scontrol.cpp   reading `scontrol -o show job` (task states, array ids)
//   slurm_command.cpp    running sbatch/scontrol/scancel through the Env, their environment
//   slurm_backend.cpp    creation and crash recovery (taking over an earlier process's arrays),
//                        leases, the step
//   slurm_submit.cpp     leasing a batch, writing its shards, sbatch
//   slurm_poll.cpp       reading results and task states, settling tasks; status and cancel

#include <map>
#include <span>
#include <string>
#include <vector>

#include "kforge/core/embedded.hpp"
#include "kforge/verify/slurm_backend.hpp"
#include "kforge/verify/store.hpp"

namespace kforge::verify {

std::span<const EmbeddedFile> slurm_scripts();

namespace slurm {

inline const store::QuerySet& q() {
  return verify_queries();
}

// A sample whose task ended without its verdict this many times is given up as failed.
constexpr int kMaxRequeues = 3;

// The array task's script (slurm/verify_task.sh, embedded).
std::string task_script();

// Slurm's JobState to the backend's task state; empty while the task has not ended.
std::string task_state(const std::string& s, bool& ended);

struct TaskInfo {
  std::string state;  // JobState
  std::string exit_code;
};

// ArrayTaskId as scontrol prints it: "3", "2-5", "1,3,7-9", "0-99%4", "0-9:2".
std::vector<int> task_ids(std::string s);
// One line of `scontrol -o show job`: its Key=value words.
std::map<std::string, std::string> scontrol_fields(const std::string& line);
// `scontrol -o show job ARRAYID`: task id -> its state (pending tasks may share a line).
std::map<int, TaskInfo> parse_scontrol(const std::string& text);
// `scontrol -o show job` (every job slurmctld knows): the array job id of the job whose
// working directory is `dir`, or "".
std::string array_job_in_dir(const std::string& text, const std::string& dir);
// The first non-blank line of a command's output.
std::string first_line(const std::string& s);

// This process's environment without the variables named (secrets stay here).
std::vector<std::string> environment_without(const std::vector<std::string>& drop);

}  // namespace slurm
}  // namespace kforge::verify
