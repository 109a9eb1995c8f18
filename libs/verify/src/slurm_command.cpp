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

extern "C" char** environ;

namespace kforge::verify {

namespace slurm {

std::string task_script() {
  for (const auto& f : slurm_scripts())
    if (f.name.ends_with("verify_task.sh")) return std::string(f.data);
  return {};
}

std::vector<std::string> environment_without(const std::vector<std::string>& drop) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string v(*e);
    auto eq = v.find('=');
    std::string name = v.substr(0, eq);
    if (std::find(drop.begin(), drop.end(), name) == drop.end()) env.push_back(std::move(v));
  }
  return env;
}

}  // namespace slurm

Result<CommandOutput> run_command(Env& env, const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout,
                                  const std::vector<std::string>* environment) {
  RunOptions o;
  o.timeout = timeout;
  if (environment) o.env = *environment;
  return env.run(argv, o);
}

}  // namespace kforge::verify
