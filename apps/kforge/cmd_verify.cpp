// kforge verify FILE: run the sandboxed verifier over records that already have code,
// kernel_wrapper and unitest_code (a JSON list or JSON Lines), without the database.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "kforge/corpus/importer.hpp"
#include "kforge/corpus/reader.hpp"
#include "kforge/verify/cost.hpp"
#include "kforge/verify/pool.hpp"
#include "kforge/verify/record_run.hpp"
#include "kforge/verify/store.hpp"
#include "kforge/verify/targets.hpp"

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
  std::string skip_file;
  std::vector<std::string> cross_compile;
  std::string order;  // cost, input or early_long; empty: verifier.order
  bool plan = false;
};

// The record indices listed in `file`, one a line (what kforged's Slurm backend writes for an
// array task: its shard's samples nobody wants any more). A missing file lists none; a line
// that is not an index is passed over.
std::vector<std::int64_t> listed_indices(const std::string& file) {
  std::vector<std::int64_t> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.find_first_not_of("0123456789") != std::string::npos ||
        line.size() > 18)
      continue;
    out.push_back(std::stoll(line));
  }
  return out;
}

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

// The pool's options from the configuration and the command line.
Result<verify::PoolOptions> pool_options(const VerifyArgs& args, const app::Config& cfg) {
  verify::PoolOptions opts;
  opts.config = cfg.verifier;
  if (args.timeout_s > 0) opts.config.timeout_s = args.timeout_s;
  if (!args.mode.empty()) {
    auto mode = parse_enum(verify::kPoolModeNames, args.mode, "verifier mode");
    if (!mode.ok()) return Error("usage", "--mode: " + mode.error().message);
    opts.config.mode = *mode;
  }
  if (auto e =
          verify::parse_targets(args.cross_compile, "--cross-compile", opts.config.cross_compile))
    return Error("usage", *e);
  if (!args.order.empty()) {
    auto order = parse_enum(verify::kVerifyOrderNames, args.order, "dispatch order");
    if (!order.ok()) return Error("usage", "--order: " + order.error().message);
    opts.config.order = *order;
  }
  opts.total_workers = args.workers;
  return opts;
}

// A record read from the file: its position and its request.
struct ReadRecord {
  std::int64_t index = 0;
  verify::VerifyRequest request;
};

// Reads each record of the file (up to --limit) as a request, its fields found by `map`. The
// whole file is read before anything runs, so that the records can be ordered (verifier.order)
// and a bad record stops the command before any sample ran.
Result<std::vector<ReadRecord>> read_requests(const VerifyArgs& args, const VerifyMap& map) {
  std::vector<ReadRecord> out;
  auto read = corpus::read_records(
      args.file, corpus::Format::automatic,
      [&](nlohmann::ordered_json&& rec, const corpus::RecordPos& pos) -> Status {
        if (args.limit > 0 && pos.index >= args.limit) return {};
        if (!rec.is_object())
          return fail("parse", args.file + ": record " + std::to_string(pos.index) + " (line " +
                                   std::to_string(pos.line) + "): not a JSON object");
        verify::VerifyRequest req;
        req.key = record_key(rec, args.key_field, pos.index);
        req.code = string_field(rec, map.code.c_str());
        req.kernel_wrapper = string_field(rec, map.kernel_wrapper.c_str());
        req.unitest_code = string_field(rec, map.unitest_code.c_str());
        out.push_back({pos.index, std::move(req)});
        return {};
      });
  if (!read.ok()) return read.error();
  return out;
}

// The records in submission order for `workers` workers (verify/cost.hpp): the longest
// predicted first, as read, or the long ones early and spread (early_long).
verify::DispatchPlan record_plan(const std::vector<ReadRecord>& records, verify::VerifyOrder order,
                                 int workers, std::vector<double>& costs) {
  costs.clear();
  for (const auto& r : records) costs.push_back(verify::predicted_cost_s(r.request));
  return verify::plan_dispatch(costs, order, workers);
}

// --plan: one JSON line per record in submission order (index, key, cost_s, features; with
// early_long also whether it counts as long), nothing run.
void print_plan(const std::vector<ReadRecord>& records, const verify::DispatchPlan& plan,
                verify::VerifyOrder order, const std::vector<double>& costs) {
  for (std::size_t k : plan.order) {
    auto f = verify::cost_features(records[k].request);
    nlohmann::ordered_json line{{"index", records[k].index},
                                {"key", records[k].request.key},
                                {"cost_s", costs[k]},
                                {"features",
                                 {{"dots", f.dots},
                                  {"tl_calls", f.tl_calls},
                                  {"jit", f.jit},
                                  {"constexprs", f.constexprs},
                                  {"test_bytes", f.test_bytes}}}};
    if (order == verify::VerifyOrder::early_long) line["long"] = static_cast<bool>(plan.is_long[k]);
    std::fputs((line.dump() + "\n").c_str(), stdout);
  }
}

// --plan's line on stderr: the order and, for early_long, what counted as long.
void describe_plan(const verify::DispatchPlan& plan, verify::VerifyOrder order, int workers) {
  std::fprintf(stderr, "plan: order %s, workers %d, predicted %.1f s per worker",
               std::string(verify::to_string(order)).c_str(), workers, plan.per_worker_s);
  if (order == verify::VerifyOrder::early_long)
    std::fprintf(stderr,
                 "; long: %lld (predicted over %.2f s), at most %d at once, %d dispatches apart",
                 static_cast<long long>(std::count(plan.is_long.begin(), plan.is_long.end(), true)),
                 plan.long_s, plan.long_at_once, plan.spacing);
  std::fputs("\n", stderr);
}

int run_verify(VerifyArgs& args, Globals& g) {
  KF_TRY_OR_REPORT(app::Config cfg, load(g));
  KF_TRY_OR_REPORT(VerifyMap map, parse_verify_map(args.map, args.key_field));
  KF_TRY_OR_REPORT(verify::PoolOptions opts, pool_options(args, cfg));
  std::vector<double> costs;
  if (args.plan) {
    KF_TRY_OR_REPORT(auto records, read_requests(args, map));
    KF_TRY_OR_REPORT(int workers, verify::Pool::planned_workers(opts));
    auto plan = record_plan(records, opts.config.order, workers, costs);
    if (!g.quiet) describe_plan(plan, opts.config.order, workers);
    print_plan(records, plan, opts.config.order, costs);
    return kOk;
  }
  std::ofstream json_out;
  if (!args.json_out.empty()) {
    json_out.open(args.json_out, std::ios::trunc);
    if (!json_out) return report(Error("io", args.json_out + ": cannot open for writing"));
  }
  // The workers start (their imports, the GPU probe) while the file is read.
  KF_TRY_OR_REPORT(auto pool, verify::Pool::create(opts));
  auto t0 = system_clock().steady_now();
  KF_TRY_OR_REPORT(auto records, read_requests(args, map));
  auto plan = record_plan(records, opts.config.order, pool->slots(), costs);
  if (opts.config.order == verify::VerifyOrder::early_long) pool->set_long_cost(plan.long_s);
  verify::RecordRunOptions ro;
  ro.slowest = args.slowest;
  ro.full = args.full;
  ro.mode = opts.config.mode;
  ro.cross_compile = opts.config.cross_compile;
  ro.code_field = map.code;
  if (!args.skip_file.empty())
    ro.unwanted = [file = args.skip_file] { return listed_indices(file); };
  bool tty = ::isatty(2) && !g.quiet;
  if (tty)
    ro.progress = [](std::int64_t written, std::int64_t total) {
      std::fprintf(stderr, "\rverified %lld / %lld   ", static_cast<long long>(written),
                   static_cast<long long>(total));
    };
  verify::RecordRun run(*pool, std::move(ro), json_out.is_open() ? &json_out : nullptr);
  for (std::size_t k : plan.order)
    if (Status st = run.submit(records[k].index, std::move(records[k].request)); !st.ok())
      return report(st.error());
  run.finish();
  if (tty) std::fprintf(stderr, "\r\033[K");
  double secs = std::chrono::duration<double>(system_clock().steady_now() - t0).count();
  std::fputs(run.summary(args.file, secs).c_str(), stdout);
  if (args.record_devices) {
    KF_TRY_OR_REPORT(auto db, app::open_store(cfg));
    auto st = verify::store_device_status(*db, pool->devices(), system_clock().wall_ms());
    if (!st.ok()) return report(st.error());
  }
  return kOk;
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
  cmd->add_option("--skip-file", args->skip_file,
                  "A file of record indices (from 0, one a line) not to verify, read again every "
                  "0.5 s while the command runs (it may appear or grow meanwhile): a listed record "
                  "not yet started never starts, one running is stopped, and neither gets a "
                  "line; kforged's Slurm backend writes it for the samples nobody wants any more")
      ->type_name("FILE");
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
  cmd->add_option("--order", args->order,
                  "Which record a free worker takes: cost (the longest predicted first, from "
                  "the code's tl.dot and tl.* calls, kernels and test length), input (in file "
                  "order) or early_long (in file order but for the few predicted to take over "
                  "6% of the run per worker: those first, at most half of the workers on them "
                  "at once); default: verifier.order. The output lines stay in record order")
      ->check(CLI::IsMember([] {
        std::vector<std::string> names;
        for (const auto& e : verify::kVerifyOrderNames) names.emplace_back(e.name);
        return names;
      }()));
  cmd->add_flag("--plan", args->plan,
                "Print each record's predicted cost as a JSON line (index, key, cost_s, "
                "features; long, with early_long) in the order the records would be "
                "submitted to the workers (--workers, else as the pool would count them), "
                "and run nothing; a line on stderr sums the plan up");
  cmd->add_flag("--record-devices", args->record_devices,
                "Record the verifier's device states in the database at the end, so `kforge "
                "status` shows a device taken out of rotation");
  cmd->footer(
      "Exit code 0 when the verifier ran, whatever the verdicts; 1 when it could not (bad file, "
      "no harness, no Python). A record missing a field is 'skipped'.");
  return {cmd, [args, &g]() -> int { return run_verify(*args, g); }};
}

}  // namespace kforge::cli
