// kforge-bench-outcomes DB TAG [TAG...]: reads each run's outcomes whole (load_outcomes, what
// kforge serve does the first time a run's page is asked for), in one process and in order, each
// on a new connection, and prints per read the CPU time (user + system), the page faults
// (minor + major) and a digest of the outcomes (the same data gives the same digest, whatever
// the build). The first read of a process is the coldest: every page of memory it takes is new.
// Each run's outcomes are kept until the end, as the viewer's cache keeps them.
//
// Last line: reads=… first_cpu_ms=… first_faults=… (then per tag: TAG_cpu_ms=… TAG_faults=…)

#include <sys/resource.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "kforge/report/outcomes.hpp"
#include "kforge/store/db.hpp"

namespace {

struct Usage {
  double cpu_ms = 0;
  long faults = 0;
};

Usage usage() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  auto ms = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1000.0 + static_cast<double>(t.tv_usec) / 1000.0;
  };
  return {ms(r.ru_utime) + ms(r.ru_stime), r.ru_minflt + r.ru_majflt};
}

// Every field a page shows of each outcome, hashed in order.
std::size_t digest(const std::vector<kforge::report::SampleOutcome>& all) {
  std::size_t h = 0;
  auto mix = [&](const std::string& v) { h = h * 1000003u ^ std::hash<std::string>{}(v); };
  auto opt = [&](const auto& v) { mix(v ? std::string(*v) : std::string("-")); };
  for (const auto& o : all) {
    mix(o.key);
    mix(o.stage);
    mix(o.failure_stage);
    opt(o.verdict);
    opt(o.detail);
    opt(o.stage_error);
    opt(o.job_error);
    for (const auto& f : o.flags) mix(f);
    for (const auto& [t, r] : o.targets) mix(t + "=" + r);
    mix(std::to_string(o.cost_usd) + "/" + std::to_string(o.prompt_tokens) + "/" +
        std::to_string(o.completion_tokens) + "/" + std::to_string(o.verify_ms) + "/" +
        std::to_string(o.llm_calls) + "/" + std::to_string(o.kernel_killed.value_or(-1)));
    for (const auto& r : o.rounds) {
      mix(std::to_string(r.round) + ":" + r.verdict.value_or("-") + "/" +
          std::to_string(r.cost_usd) + "/" + std::to_string(r.tokens));
      for (const auto& f : r.flags) mix(f);
    }
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kforge;
  if (argc < 3) {
    std::fprintf(stderr, "usage: kforge-bench-outcomes DB TAG [TAG...]\n");
    return 2;
  }
  std::vector<std::vector<report::SampleOutcome>> kept;
  std::string kv = "reads=" + std::to_string(argc - 2);
  for (int i = 2; i < argc; ++i) {
    auto db = store::Db::open({.path = argv[1], .migrate = false});
    if (!db.ok()) {
      std::fprintf(stderr, "%s\n", db.error().message.c_str());
      return 1;
    }
    auto run = report::find_run(**db, argv[i]);
    if (!run.ok()) {
      std::fprintf(stderr, "%s\n", run.error().message.c_str());
      return 1;
    }
    const Usage before = usage();
    auto outcomes = report::load_outcomes(**db, *run);
    const Usage after = usage();
    if (!outcomes.ok()) {
      std::fprintf(stderr, "%s\n", outcomes.error().message.c_str());
      return 1;
    }
    const double cpu = after.cpu_ms - before.cpu_ms;
    const long faults = after.faults - before.faults;
    std::printf("%s: %zu outcomes, %.0f ms CPU, %ld page faults, digest %016zx\n", argv[i],
                outcomes->size(), cpu, faults, digest(*outcomes));
    if (i == 2)
      kv += " first_cpu_ms=" + std::to_string(static_cast<long>(cpu)) +
            " first_faults=" + std::to_string(faults);
    kv += " " + std::string(argv[i]) + "_cpu_ms=" + std::to_string(static_cast<long>(cpu)) + " " +
          argv[i] + "_faults=" + std::to_string(faults);
    kept.push_back(std::move(*outcomes));
  }
  std::printf("%s\n", kv.c_str());
  return 0;
}
