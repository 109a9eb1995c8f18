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
#include <optional>
#include <string>
#include <type_traits>
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

// Every field of each outcome (SampleOutcome's and RoundOutcome's members, all of them), hashed
// in order; numbers as exact text (doubles in hexadecimal), absent values as "-".
std::size_t digest(const std::vector<kforge::report::SampleOutcome>& all) {
  std::size_t h = 0;
  auto mix = [&](const std::string& v) { h = h * 1000003u ^ std::hash<std::string>{}(v); };
  auto num = [&](auto v) {
    char buf[64];
    if constexpr (std::is_floating_point_v<decltype(v)>)
      std::snprintf(buf, sizeof buf, "%a", static_cast<double>(v));
    else
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    mix(buf);
  };
  auto opt_num = [&](const auto& v) {
    if (v)
      num(*v);
    else
      mix("-");
  };
  auto opt = [&](const std::optional<std::string>& v) { mix(v ? "+" + *v : std::string("-")); };
  auto list = [&](const std::vector<std::string>& v) {
    num(v.size());
    for (const auto& s : v) mix(s);
  };
  for (const auto& o : all) {
    num(o.job_id);
    num(o.sample_id);
    mix(o.key);
    num(static_cast<int>(o.state));
    mix(o.stage);
    opt(o.job_error_kind);
    opt(o.job_error);
    mix(o.failure_stage);
    opt_num(o.stage_status ? std::optional<int>(static_cast<int>(*o.stage_status)) : std::nullopt);
    opt(o.stage_error_kind);
    opt(o.stage_error);
    opt(o.verdict);
    list(o.flags);
    opt(o.detail);
    num(o.targets.size());
    for (const auto& [t, r] : o.targets) mix(t + "=" + r);
    opt_num(o.kernel_killed);
    opt_num(o.kernel_applicable);
    num(o.timed ? 1 : 0);
    opt_num(o.speedup);
    opt_num(o.pass_perf ? std::optional<int>(*o.pass_perf ? 1 : 0) : std::nullopt);
    list(o.speed_flags);
    opt_num(o.kernel_share);
    opt_num(o.dup_group);
    num(o.dup_group_size);
    for (auto v : {o.prompt_tokens, o.completion_tokens, o.llm_ms, o.llm_calls, o.verify_ms,
                   o.verifications, o.mended_outputs, o.reasoning_tokens, o.cached_prompt_tokens})
      num(v);
    num(o.cost_usd);
    num(o.repair_round);
    num(o.rounds.size());
    for (const auto& r : o.rounds) {
      num(r.round);
      opt(r.verdict);
      list(r.flags);
      num(r.cost_usd);
      num(r.tokens);
      num(r.llm_ms);
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
