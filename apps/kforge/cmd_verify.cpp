// kforge verify FILE: run the sandboxed verifier over records that already have code,
// kernel_wrapper and unitest_code (a JSON list or JSON Lines), without the database.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kforge/core/printable.hpp"
#include "kforge/corpus/importer.hpp"
#include "kforge/corpus/reader.hpp"
#include "kforge/verify/figures.hpp"
#include "kforge/verify/pool.hpp"
#include "kforge/verify/speed.hpp"
#include "kforge/verify/store.hpp"
#include "kforge/verify/targets.hpp"
#include "kforge/verify/verdict_line.hpp"

namespace kforge::cli {
namespace {

struct VerifyArgs {
  std::string file;
  double timeout_s = 0;
  std::int64_t limit = 0;
  int workers = 0;
  std::string json_out;
  std::string key_field;
  std::string map;
  std::string mode;
  int slowest = 10;
  bool record_devices = false;
  bool full = false;
  std::vector<std::string> cross_compile;
};

struct Slow {
  std::int64_t index = 0;
  std::string key;
  nlohmann::json figures;
};

std::optional<std::string> string_field(const nlohmann::ordered_json& rec, const char* name) {
  auto it = rec.find(name);
  if (it == rec.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::string record_key(const nlohmann::ordered_json& rec, const std::string& field,
                       std::int64_t index) {
  for (const std::string& f : {field, std::string("key"), std::string("file"), std::string("id")}) {
    if (f.empty()) continue;
    auto it = rec.find(f);
    if (it == rec.end()) continue;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
  }
  return "#" + std::to_string(index);
}

// Which field of a record feeds each input of the verifier.
struct VerifyMap {
  std::string code = "code";
  std::string kernel_wrapper = "kernel_wrapper";
  std::string unitest_code = "unitest_code";
};

// "code=output,kernel_wrapper=w,..." with targets code, kernel_wrapper, unitest_code and key
// (which sets `key_field`); each at most once.
Result<VerifyMap> parse_verify_map(const std::string& spec, std::string& key_field) {
  const std::vector<std::string> targets = {"code", "kernel_wrapper", "unitest_code", "key"};
  KF_TRY(auto given, corpus::parse_map_spec(spec, targets));
  VerifyMap m;
  for (const auto& [target, field] : given) {
    if (target == "code")
      m.code = field;
    else if (target == "kernel_wrapper")
      m.kernel_wrapper = field;
    else if (target == "unitest_code")
      m.unitest_code = field;
    else
      key_field = field;
  }
  return m;
}

}  // namespace

Command add_verify(CLI::App& root, Globals& g) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = root.add_subcommand(
      "verify",
      "Run the sandboxed verifier over records with code, kernel_wrapper and unitest_code");
  cmd->add_option("file", args->file, "A JSON list or JSON Lines file of records")->required();
  cmd->add_option("--timeout", args->timeout_s, "Seconds per sample (default: verifier.timeout_s)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--limit", args->limit, "Verify only the first N records")
      ->check(whole_number(1, "records"));
  cmd->add_option("--workers", args->workers, "Total workers (default: from the configuration)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--json", args->json_out,
                  "Write one JSON line per record: index, key, verdict, detail, flags, "
                  "duration_ms, cpu_ms, device, phases (ms), phase_times (each harness phase's "
                  "wall and CPU ms), autotune (the config used), "
                  "mutation (the mutation score), coverage (what the launches exercised) and "
                  "cross_compile (per target: ok, error, unavailable or not_run; "
                  "cross_compile_errors has each error's stage and first lines), speed (the "
                  "speed label, where verifier.timing timed the sample)");
  cmd->add_flag("--full", args->full,
                "With --json: write the verdict line instead (index, key, verdict, detail, "
                "flags, report, script, stderr_tail, duration_ms, device), each line flushed as "
                "its record finishes (in finishing order); what a Slurm array task of the daemon "
                "writes and reads back");
  cmd->add_option("--key", args->key_field,
                  "The field naming each record (default: key, file, id)");
  cmd->add_option("--map", args->map,
                  "Field mapping TARGET=FIELD,... with targets code, kernel_wrapper, "
                  "unitest_code, key: e.g. code=output,key=file for a kforge export of a "
                  "TritonBench corpus, which keeps the corpus's own field names");
  cmd->add_option("--mode", args->mode, "warm or fresh (default: verifier.mode)")
      ->check(CLI::IsMember([] {
        std::vector<std::string> names;
        for (const auto& e : verify::kPoolModeNames) names.emplace_back(e.name);
        return names;
      }()));
  cmd->add_option("--slowest", args->slowest, "List the N slowest samples (0: none)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--cross-compile", args->cross_compile,
                  "Also compile each passing sample's launched kernels for TARGET (hip:gfx942, "
                  "hip:gfx90a; repeatable or a comma list), besides verifier.cross_compile; "
                  "nothing runs there (docs/VERIFIER.md, \"Other targets\")")
      ->type_name("TARGET");
  cmd->add_flag("--record-devices", args->record_devices,
                "Record the verifier's device states in the database at the end, so `kforge "
                "status` shows a device taken out of rotation");
  cmd->footer(
      "Exit code 0 when the verifier ran, whatever the verdicts; 1 when it could not (bad file, "
      "no harness, no Python). A record missing a field is 'skipped'.");
  return {
      cmd, [args, &g]() -> int {
        KF_TRY_OR_REPORT(app::Config cfg, load(g));
        KF_TRY_OR_REPORT(VerifyMap map, parse_verify_map(args->map, args->key_field));
        verify::PoolOptions opts;
        opts.config = cfg.verifier;
        if (args->timeout_s > 0) opts.config.timeout_s = args->timeout_s;
        if (!args->mode.empty()) {
          auto mode = parse_enum(verify::kPoolModeNames, args->mode, "verifier mode");
          if (!mode.ok()) return report(Error("usage", "--mode: " + mode.error().message));
          opts.config.mode = *mode;
        }
        if (auto e = verify::parse_targets(args->cross_compile, "--cross-compile",
                                           opts.config.cross_compile))
          return report(Error("usage", *e));
        opts.total_workers = args->workers;
        std::ofstream json_out;
        if (!args->json_out.empty()) {
          json_out.open(args->json_out, std::ios::trunc);
          if (!json_out) return report(Error("io", args->json_out + ": cannot open for writing"));
        }
        KF_TRY_OR_REPORT(auto pool, verify::Pool::create(opts));
        auto t0 = system_clock().steady_now();
        std::map<verify::Verdict, std::int64_t> by_verdict;
        std::map<std::string, std::int64_t> by_flag;
        // target -> result -> samples
        std::map<std::string, std::map<std::string, std::int64_t>> by_target;
        std::int64_t verified = 0, total = 0, written = 0, no_code = 0;
        // Results arrive out of order; lines are written in record order.
        std::map<std::int64_t, nlohmann::ordered_json> pending;
        auto flush = [&] {
          while (!pending.empty() && pending.begin()->first == written) {
            if (json_out) json_out << pending.begin()->second.dump() << "\n";
            pending.erase(pending.begin());
            ++written;
          }
        };
        bool tty = ::isatty(2) && !g.quiet;
        std::vector<Slow> slow;  // the slowest so far, longest first
        auto on_result = [&](std::int64_t index, verify::VerifyResult&& r) {
          ++by_verdict[r.verdict];
          for (const auto& f : r.flags) ++by_flag[f];
          if (r.verified()) ++verified;
          auto fig = verify::sample_figures(r);
          nlohmann::ordered_json line{{"index", index},
                                      {"key", r.key},
                                      {"verdict", verify::to_string(r.verdict)},
                                      {"detail", r.detail},
                                      {"flags", r.flags}};
          for (const auto& [k, v] : fig.items()) line[k] = v;
          // The test's strength (docs/VERIFIER.md, "Output mutants") and what it exercised.
          if (r.report.contains("mutation")) line["mutation"] = r.report["mutation"];  // the pool's
          if (r.harness && r.harness->coverage) line["coverage"] = r.harness->coverage->raw;
          // The speed label (verifier.timing; docs/VERIFIER.md, "The speed label").
          if (auto l = verify::speed_label(r)) line["speed"] = l->to_json();
          // Per target asked for: ok, error, unavailable or not_run (the sample did not pass,
          // so nothing was compiled); the errors' stage and first lines.
          auto targets = verify::cross_compile_results(r);
          for (const auto& want : opts.config.cross_compile)
            if (std::none_of(targets.begin(), targets.end(),
                             [&](const verify::TargetResult& t) { return t.target == want; }))
              targets.push_back(
                  {want, store::TargetResultKind::not_run, "the sample did not pass", ""});
          std::sort(targets.begin(), targets.end(),
                    [](const verify::TargetResult& x, const verify::TargetResult& y) {
                      return x.target < y.target;
                    });
          if (!targets.empty()) {
            line["cross_compile"] = verify::cross_compile_summary(targets);
            nlohmann::ordered_json errors = nlohmann::ordered_json::object();
            for (const auto& t : targets) {
              ++by_target[t.target][std::string(to_string(t.result))];
              if (t.result == store::TargetResultKind::error) errors[t.target] = t.error;
            }
            if (!errors.empty()) line["cross_compile_errors"] = std::move(errors);
          }
          if (args->slowest > 0) {
            std::int64_t ms = r.duration_ms + fig["phases"].value("mutant", std::int64_t{0});
            auto pos = std::find_if(slow.begin(), slow.end(), [&](const Slow& s) {
              return s.figures.value("total_ms", std::int64_t{0}) < ms;
            });
            if (pos != slow.end() || static_cast<int>(slow.size()) < args->slowest) {
              fig["total_ms"] = ms;
              slow.insert(pos, Slow{index, r.key, std::move(fig)});
              if (static_cast<int>(slow.size()) > args->slowest) slow.pop_back();
            }
          }
          if (args->full) {
            // The verdict line (verify/verdict_line.hpp) the Slurm backend reads back.
            verify::VerdictLine full{index, std::move(r)};
            if (json_out)
              json_out << verify::to_json(full).dump(-1, ' ', false,
                                                     nlohmann::json::error_handler_t::replace)
                       << "\n"
                       << std::flush;
            ++written;
          } else {
            pending[index] = std::move(line);
            flush();
          }
          if (tty)
            std::fprintf(stderr, "\rverified %lld / %lld   ", static_cast<long long>(written),
                         static_cast<long long>(total));
        };
        auto read = corpus::read_records(
            args->file, corpus::Format::automatic,
            [&](nlohmann::ordered_json&& rec, const corpus::RecordPos& pos) -> Status {
              if (args->limit > 0 && pos.index >= args->limit) return {};
              if (!rec.is_object())
                return fail("parse", args->file + ": record " + std::to_string(pos.index) +
                                         " (line " + std::to_string(pos.line) +
                                         "): not a JSON object");
              verify::VerifyRequest req;
              req.key = record_key(rec, args->key_field, pos.index);
              req.code = string_field(rec, map.code.c_str());
              if (!req.code) ++no_code;
              req.kernel_wrapper = string_field(rec, map.kernel_wrapper.c_str());
              req.unitest_code = string_field(rec, map.unitest_code.c_str());
              ++total;
              while (!pool->accepting()) pool->step(std::chrono::milliseconds(100));
              std::int64_t index = pos.index;
              auto id = pool->submit(std::move(req), [&on_result, index](verify::VerifyResult&& r) {
                on_result(index, std::move(r));
              });
              if (!id.ok()) return id.error();
              return {};
            });
        if (!read.ok()) return report(read.error());
        pool->drain();
        if (tty) std::fprintf(stderr, "\r\033[K");
        double secs = std::chrono::duration<double>(system_clock().steady_now() - t0).count();
        // Skipped records (a field missing) never reached the sandbox: they are not counted
        // as verified.
        const std::int64_t skipped = by_verdict[verify::Verdict::skipped];
        const std::int64_t ran = total - skipped;
        std::printf(
            "%s: %lld records, %lld run through the verifier in %.1f s (%.2f samples/s, %d "
            "workers, %s)",
            args->file.c_str(), static_cast<long long>(total), static_cast<long long>(ran), secs,
            secs > 0 ? static_cast<double>(ran) / secs : 0.0, pool->slots(),
            std::string(verify::to_string(opts.config.mode)).c_str());
        if (skipped > 0)
          std::printf("; %lld skipped (a field missing), not run", static_cast<long long>(skipped));
        std::printf("\n");
        for (const auto& [v, name] : store::kVerdictNames)
          std::printf("  %-8s %lld\n", std::string(name).c_str(),
                      static_cast<long long>(by_verdict[v]));
        for (const auto& [f, n] : by_flag)
          std::printf("  flagged %s: %lld\n", f.c_str(), static_cast<long long>(n));
        std::printf("  verified (passed, no flag): %lld\n", static_cast<long long>(verified));
        for (const auto& want : opts.config.cross_compile) by_target[want];  // even if none ran
        for (const auto& [target, counts] : by_target) {
          std::string parts;
          for (const auto& [result, n] : counts)
            parts += (parts.empty() ? "" : ", ") + result + " " + std::to_string(n);
          if (parts.empty()) parts = "no record";
          std::printf("  cross-compile %s (compiled, not run): %s\n", target.c_str(),
                      parts.c_str());
        }
        if (no_code > 0)
          std::printf(
              "  %lld records have no string field '%s' and were skipped; --map code=FIELD "
              "names the code's field (code=output for an export of a TritonBench "
              "corpus)\n",
              static_cast<long long>(no_code), map.code.c_str());
        std::printf("  workers: %s\n", pool->sizing().c_str());
        if (!slow.empty()) {
          std::printf("slowest samples (sample time = real run + mutant run; ms):\n");
          for (const auto& s : slow) {
            const auto& ph = s.figures["phases"];
            auto f = [&](const char* k) {
              return static_cast<long long>(ph.value(k, std::int64_t{-1}));
            };
            std::printf(
                "  %7lld  #%lld %s  cpu %lld  import %lld  tests %lld  compile %lld (%lld calls, "
                "cpu %lld + tools %lld)  mutant %lld  on %s\n",
                static_cast<long long>(s.figures.value("total_ms", std::int64_t{0})),
                static_cast<long long>(s.index), printable(s.key).c_str(),
                static_cast<long long>(s.figures.value("cpu_ms", std::int64_t{-1})), f("import"),
                f("tests"), f("compile"), f("compiles"), f("compile_cpu"), f("compile_child_cpu"),
                f("mutant"), s.figures.value("device", std::string()).c_str());
            auto line = verify::phase_times_line(s.figures["phase_times"]);
            if (!line.empty()) std::printf("           phases (wall/cpu ms): %s\n", line.c_str());
          }
        }
        auto devs = pool->devices();
        for (const auto& d : devs)
          if (!d.in_rotation)
            std::printf("  ALERT: %s out of rotation: %s\n", d.device.c_str(),
                        printable(d.reason).c_str());
        if (args->record_devices) {
          KF_TRY_OR_REPORT(auto db, app::open_store(cfg));
          auto st = verify::store_device_status(*db, devs, system_clock().wall_ms());
          if (!st.ok()) return report(st.error());
        }
        return kOk;
      }};
}

}  // namespace kforge::cli
