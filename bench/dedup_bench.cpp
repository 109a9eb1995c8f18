// kforge-bench-dedup [--files N] [--threads T] [--dir D] [--corpus FILE]: near-duplicate groups
// over a large corpus.
//
// Builds a corpus of N files (default 100,000) as JSON Lines under D (default .bench-data, kept
// out of git) from the real kernels of FILE (default ../shared/corpus/TritonBench_G_v1.json):
// each file is one real kernel file with a share of its identifiers renamed per file (so files
// are distinct, about 7.7 KB each like the originals), and 12% of the files are near copies of an
// earlier file (a licence header, other constants, comments), as in real crawls. It imports the
// corpus into a fresh database (the baseline: what import alone costs), then runs kforge corpus
// dedup's update on T threads (default 2) and reports time and peak resident memory of each, in
// child processes.
//
// kforge-bench-dedup --pairs FILE [--crawl DIR]: precision and recall of grouping and of
// decontamination on labelled pairs of crawl files (bench/dedup/crawl_pairs.json), whose code
// lies under DIR (default .bench-data/crawl) as <owner>+<repo>/<path>. With --explain OUT, one
// JSON line per pair to OUT with what each rule saw (bench/dedup/errors.py sorts the errors by
// cause from it). --threshold T scores grouping (and --explain's `grouped`) at T instead of the
// default threshold; the sweep over other thresholds is printed either way.
//
// Last line: files=… mb=… import_s=… dedup_s=… dedup_cpu_s=… files_per_s=… pairs=… groups=…
// grouped=…
//            planted=… import_rss_mb=… dedup_rss_mb=…

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/env.hpp"
#include "kforge/corpus/importer.hpp"
#include "kforge/dedup/evalset.hpp"
#include "kforge/dedup/groups.hpp"
#include "kforge/dedup/signature.hpp"

namespace {

namespace fs = std::filesystem;

long vm_hwm_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// Runs fn in a child; returns {seconds, peak RSS MB} and the child's text result.
template <class Fn>
std::pair<std::pair<double, double>, std::string> in_child(Fn fn) {
  int fds[2];
  if (pipe(fds) != 0) return {{-1, -1}, ""};
  // The benchmark has no other thread when it forks, so the child may allocate.
  auto pid = kforge::default_env().fork_call([&]() -> int {
    close(fds[0]);
    auto t0 = std::chrono::steady_clock::now();
    std::string out = fn();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string msg = std::to_string(secs) + " " + std::to_string(vm_hwm_kb()) + " " + out;
    (void)!write(fds[1], msg.data(), msg.size());
    return 0;
  });
  close(fds[1]);
  std::string buf;
  char chunk[512];
  ssize_t n;
  while ((n = read(fds[0], chunk, sizeof chunk)) > 0)
    buf.append(chunk, static_cast<std::size_t>(n));
  close(fds[0]);
  if (pid.ok()) kforge::default_env().wait(*pid, kforge::WaitMode::block);
  double secs = 0;
  long kb = 0;
  int used = 0;
  std::sscanf(buf.c_str(), "%lf %ld %n", &secs, &kb, &used);
  return {{secs, static_cast<double>(kb) / 1024.0}, buf.substr(static_cast<std::size_t>(used))};
}

// The identifiers of code (tokens that start with a letter or '_'), in order of appearance.
std::vector<std::string> identifiers(const std::string& code) {
  std::vector<std::string> out;
  // As written (python_tokens): the corpus does not change with dedup's normalisation.
  for (auto t : kforge::dedup::python_tokens(code))
    if (!t.empty() && (std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_'))
      out.emplace_back(t);
  return out;
}

std::string rename_some(std::string code, std::mt19937_64& rng, std::uint64_t file) {
  auto ids = identifiers(code);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  static const std::vector<std::string> keep = {"def",  "return", "import", "for",   "in",   "if",
                                                "else", "tl",     "triton", "torch", "range"};
  for (const auto& id : ids) {
    if (std::find(keep.begin(), keep.end(), id) != keep.end()) continue;
    if (rng() % 100 >= 35) continue;
    std::string to = id + "_" + std::to_string(file % 9973);
    std::string out;
    out.reserve(code.size() + 64);
    for (std::size_t at = 0; at < code.size();) {
      std::size_t p = code.find(id, at);
      if (p == std::string::npos) {
        out.append(code, at, std::string::npos);
        break;
      }
      bool left =
          p == 0 || !(std::isalnum(static_cast<unsigned char>(code[p - 1])) || code[p - 1] == '_');
      std::size_t e = p + id.size();
      bool right = e >= code.size() ||
                   !(std::isalnum(static_cast<unsigned char>(code[e])) || code[e] == '_');
      out.append(code, at, p - at);
      out += left && right ? to : id;
      at = e;
    }
    code = std::move(out);
  }
  return code;
}

// The decorator lines of a file that name a jit (recognised or not), for --explain.
nlohmann::json jit_lines(const std::string& code) {
  auto out = nlohmann::json::array();
  std::size_t at = 0;
  while (at < code.size()) {
    std::size_t nl = code.find('\n', at);
    if (nl == std::string::npos) nl = code.size();
    std::string line = code.substr(at, nl - at);
    std::size_t b = line.find_first_not_of(" \t");
    if (b != std::string::npos && line[b] == '@' && line.find("jit", b) != std::string::npos)
      out.push_back(line.substr(b, line.find('(', b) - b));
    at = nl + 1;
  }
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// --pairs FILE --crawl DIR: scores labelled pairs of crawl files (bench/dedup/crawl_pairs.json).
// Grouping calls a pair near as corpus groups do (dedup::near: the same kernels up to renames, or
// at or above the corpus threshold with no conflict of operations); decontamination as `kforge
// export --exclude-near` calls it (EvalIndex::nearest at kDefaultKernelThreshold, `b` the eval
// record, `a` the sample).
// What the rules saw of one pair, for --explain: each side's kernels (name, tokens, helper) with
// the nearest kernel of the other side.
nlohmann::json explain_side(const std::vector<kforge::dedup::KernelSignature>& mine,
                            const std::vector<kforge::dedup::KernelSignature>& other) {
  auto out = nlohmann::json::array();
  for (const auto& k : mine) {
    double best = 0;
    std::string to;
    for (const auto& o : other) {
      double s = k.body == o.body ? 1.0 : kforge::dedup::similarity(k.sig, o.sig);
      if (s > best) best = s, to = o.name;
    }
    out.push_back({{"name", k.name},
                   {"tokens", k.tokens},
                   {"helper", k.helper},
                   {"best", best},
                   {"to", to},
                   {"ops", k.ops}});
  }
  return out;
}

int score_pairs(const fs::path& pairs_file, const fs::path& crawl, const fs::path& explain,
                double threshold) {
  auto doc = nlohmann::json::parse(read_file(pairs_file));
  std::ofstream ex;
  if (!explain.empty()) ex.open(explain);
  struct Rates {
    int tp = 0, fp = 0, fn = 0, tn = 0;
    void add(bool near, bool copy) { (near ? (copy ? tp : fp) : (copy ? fn : tn))++; }
    double p() const { return tp + fp ? double(tp) / (tp + fp) : 1; }
    double r() const { return tp + fn ? double(tp) / (tp + fn) : 1; }
    double f1() const { return p() + r() > 0 ? 2 * p() * r() / (p() + r()) : 0; }
  } group, decon;
  // Per kind ("kind", else "earlier"), per call, clear-cut ("borderline" false) and all, and the
  // held-out pairs ("held_out" true) apart: (set, kind, clear-cut or all) -> rates.
  std::map<std::tuple<std::string, std::string, std::string>, Rates> by_kind;
  // Grouping at other thresholds (the default is the one above).
  std::vector<std::pair<double, Rates>> sweep;
  for (double t : {0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9}) sweep.push_back({t, Rates{}});
  for (const auto& pr : doc["pairs"]) {
    std::string a = read_file(crawl / pr["a"].get<std::string>());
    std::string b = read_file(crawl / pr["b"].get<std::string>());
    if (a.empty() || b.empty()) {
      std::fprintf(stderr, "kforge-bench-dedup: %s or %s is missing under %s\n",
                   pr["a"].get<std::string>().c_str(), pr["b"].get<std::string>().c_str(),
                   crawl.c_str());
      return 1;
    }
    bool copy = pr["label"] == "copy";
    auto sa = kforge::dedup::compute_signature(a), sb = kforge::dedup::compute_signature(b);
    double file_sim = sa.kernels_sha == sb.kernels_sha ? 1.0 : kforge::dedup::similarity(sa, sb);
    double kernel_sim = 0;
    for (const auto& x : kforge::dedup::kernel_signatures(a))
      for (const auto& y : kforge::dedup::kernel_signatures(b))
        kernel_sim = std::max(kernel_sim, kforge::dedup::kernel_match(x, y));
    bool g = kforge::dedup::near(sa, sb, threshold);
    // Decontamination as `kforge export --exclude-near` calls it: b the eval record, a the sample.
    kforge::dedup::EvalIndex eval;
    eval.add_record("b", "b", b);
    auto hit = eval.nearest(a, kforge::dedup::kDefaultKernelThreshold);
    bool d = hit.has_value();
    // "set": which call the pair is labelled for (grouping, decontamination or both).
    std::string set = pr.value("set", std::string("both"));
    bool in_g = set != "decontamination", in_d = set != "grouping";
    bool held_out = pr.value("held_out", false), borderline = pr.value("borderline", false);
    std::string kind = pr.value("kind", std::string("earlier")) + (held_out ? " (held out)" : "");
    for (const std::string& scope : {kind, std::string(held_out ? "held out" : "all kinds")})
      for (const char* cut : {"clear-cut", "all"}) {
        if (borderline && std::string(cut) == "clear-cut") continue;
        if (in_g) by_kind[{"grouping", scope, cut}].add(g, copy);
        if (in_d) by_kind[{"decontamination", scope, cut}].add(d, copy);
      }
    if (in_g && !held_out) group.add(g, copy);  // held-out pairs: scored above only
    if (in_g && !held_out)
      for (auto& [t, r] : sweep) r.add(kforge::dedup::near(sa, sb, t), copy);
    if (in_d && !held_out) decon.add(d, copy);
    if (ex.is_open()) {
      auto ka = kforge::dedup::kernel_signatures(a), kb = kforge::dedup::kernel_signatures(b);
      ex << nlohmann::json{{"a", pr["a"]},
                           {"b", pr["b"]},
                           {"label", pr["label"]},
                           {"why", pr["why"]},
                           {"set", set},
                           {"file", file_sim},
                           {"exact", sa.kernels_sha == sb.kernels_sha},
                           {"conflict", kforge::dedup::ops_conflict(sa.ops, sb.ops)},
                           {"ops_a", sa.ops},
                           {"ops_b", sb.ops},
                           {"within_ab", kforge::dedup::kernels_within(sa, sb)},
                           {"within_ba", kforge::dedup::kernels_within(sb, sa)},
                           {"named", kforge::dedup::kernels_named(sa, sb)},
                           {"named_within", kforge::dedup::kernels_named_within(sa, sb)},
                           {"kernel", kernel_sim},
                           {"grouped", g},
                           {"flagged", d},
                           {"how", !hit         ? ""
                                   : hit->named ? "named"
                                   : hit->exact ? "exact"
                                                : "similarity"},
                           {"match", !hit ? "" : hit->kernel + " ~ " + hit->eval_kernel},
                           {"kernels_a", explain_side(ka, kb)},
                           {"kernels_b", explain_side(kb, ka)},
                           {"jit_a", jit_lines(a)},
                           {"jit_b", jit_lines(b)}}
                .dump()
         << "\n";
    }
    std::printf("%-9s file %.2f%s kernel %.2f%s  %s | %s ~ %s\n", copy ? "copy" : "different",
                file_sim, !in_g || g == copy ? " " : "!", kernel_sim,
                !in_d || d == copy ? " " : "!", pr["why"].get<std::string>().c_str(),
                pr["a"].get<std::string>().c_str(), pr["b"].get<std::string>().c_str());
  }
  for (const auto& [t, r] : sweep)
    std::printf("grouping at %.2f: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)\n", t,
                r.p(), r.r(), r.tp, r.fp, r.fn, r.tn);
  for (const auto& [k, r] : by_kind)
    std::printf("%s, %s, %s: precision %.3f recall %.3f F1 %.3f (tp %d fp %d fn %d tn %d)\n",
                std::get<0>(k).c_str(), std::get<1>(k).c_str(), std::get<2>(k).c_str(), r.p(),
                r.r(), r.f1(), r.tp, r.fp, r.fn, r.tn);
  for (auto [name, r] : {std::pair{"grouping", group}, std::pair{"decontamination", decon}})
    std::printf("%s: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)\n", name, r.p(), r.r(),
                r.tp, r.fp, r.fn, r.tn);
  return 0;
}

// --eval FILE --crawl DIR: decontaminates every crawl file (planted files and revisions, keys
// with `@`, left out) against an eval set (a JSON list of records, TritonBench-G's: code in
// "output", key in "file") as `kforge export --exclude-near` does, and prints each flagged file
// with its match and how it matched (exact, similarity, named alike), then the totals.
int decontaminate_crawl(const fs::path& eval_file, const fs::path& crawl) {
  auto records = nlohmann::json::parse(read_file(eval_file));
  kforge::dedup::EvalIndex eval;
  for (const auto& r : records)
    eval.add_record(eval_file.string(), r.value("file", std::string()),
                    r.value("output", r.value("code", std::string())));
  std::vector<std::string> keys;
  for (const auto& e : fs::recursive_directory_iterator(crawl)) {
    std::string key = fs::relative(e.path(), crawl).string();
    if (e.is_regular_file() && key.ends_with(".py") && !key.starts_with("planted/") &&
        key.find('@') == std::string::npos)
      keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  std::map<std::string, int> by_how;
  int flagged = 0, outside = 0;
  for (const auto& key : keys) {
    auto hit = eval.nearest(read_file(crawl / key), kforge::dedup::kDefaultKernelThreshold);
    if (!hit) continue;
    std::string how = hit->named ? "named" : hit->exact ? "exact" : "similarity";
    bool own = key.starts_with("thunlp+TritonBench/data/TritonBench_G_v1/");
    ++flagged, outside += own ? 0 : 1, ++by_how[how + (own ? " (own)" : "")];
    std::printf("flagged %s: %s ~ %s of %s, %.2f, %s\n", key.c_str(), hit->kernel.c_str(),
                hit->eval_kernel.c_str(), hit->key.c_str(), hit->similarity, how.c_str());
  }
  for (const auto& [how, n] : by_how) std::printf("by %s: %d\n", how.c_str(), n);
  std::printf("files %zu, flagged %d, outside TritonBench-G's own %d\n", keys.size(), flagged,
              outside);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  long files = 100000;
  int threads = 2;
  fs::path dir = ".bench-data";
  fs::path source = "../shared/corpus/TritonBench_G_v1.json";
  fs::path pairs_file, crawl = ".bench-data/crawl", explain, eval_file;
  double threshold = kforge::dedup::kDefaultThreshold;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--pairs")
      pairs_file = argv[i + 1];
    else if (a == "--eval")
      eval_file = argv[i + 1];
    else if (a == "--crawl")
      crawl = argv[i + 1];
    else if (a == "--threshold") {
      char* end = nullptr;
      threshold = std::strtod(argv[i + 1], &end);
      if (end == argv[i + 1] || *end != '\0' || !(threshold > 0 && threshold <= 1)) {
        std::fprintf(stderr, "kforge-bench-dedup: --threshold %s: want a number in (0, 1]\n",
                     argv[i + 1]);
        return 2;
      }
    } else if (a == "--explain")
      explain = argv[i + 1];
    else if (a == "--files")
      files = std::stol(argv[i + 1]);
    else if (a == "--threads")
      threads = std::stoi(argv[i + 1]);
    else if (a == "--dir")
      dir = argv[i + 1];
    else if (a == "--corpus")
      source = argv[i + 1];
    else {
      std::fprintf(stderr,
                   "usage: kforge-bench-dedup [--files N] [--threads T] [--dir D] "
                   "[--corpus FILE] | --pairs FILE [--crawl DIR] [--explain OUT] [--threshold T] | "
                   "--eval FILE [--crawl DIR]\n");
      return 2;
    }
  }
  if (!pairs_file.empty()) return score_pairs(pairs_file, crawl, explain, threshold);
  if (!eval_file.empty()) return decontaminate_crawl(eval_file, crawl);
  std::ifstream in(source);
  if (!in) {
    std::fprintf(stderr, "kforge-bench-dedup: cannot read %s\n", source.c_str());
    return 1;
  }
  auto real = nlohmann::json::parse(in);
  std::vector<std::string> kernels;
  for (const auto& r : real) kernels.push_back(r.value("output", r.value("code", std::string())));
  fs::create_directories(dir);
  fs::path corpus = dir / ("dedup_" + std::to_string(files) + ".jsonl");
  long planted = 0;
  {
    std::mt19937_64 rng(29);
    std::ofstream out(corpus);
    std::vector<std::string> recent;  // for near copies
    for (long f = 0; f < files; ++f) {
      std::string code;
      if (!recent.empty() && rng() % 100 < 12) {
        code = "# Copyright (c) fork " + std::to_string(f) + "\n" + recent[rng() % recent.size()];
        for (std::size_t p = code.find("1024"); p != std::string::npos;
             p = code.find("1024", p + 1))
          code.replace(p, 4, "2048");
        ++planted;
      } else {
        code = rename_some(kernels[rng() % kernels.size()], rng, static_cast<std::uint64_t>(f));
        if (recent.size() < 512)
          recent.push_back(code);
        else
          recent[rng() % recent.size()] = code;
      }
      out << nlohmann::json{{"key", "f" + std::to_string(f)}, {"code", code}}.dump() << "\n";
    }
  }
  double mb = static_cast<double>(fs::file_size(corpus)) / 1e6;
  fs::path db_path = dir / "dedup_bench.db";
  for (const char* ext : {"", "-wal", "-shm"}) fs::remove(db_path.string() + ext);
  kforge::store::OpenOptions o;
  o.path = db_path.string();

  auto imp = in_child([&] {
    auto db = kforge::store::Db::open(o);
    kforge::corpus::ImportOptions opts;
    opts.map.key = "key";
    auto r = kforge::corpus::import_file(**db, corpus, opts);
    if (!r.ok()) std::fprintf(stderr, "import: %s\n", r.error().message.c_str());
    return std::string();
  });
  auto dd = in_child([&] {
    auto db = kforge::store::Db::open(o);
    kforge::dedup::UpdateOptions opts;
    opts.threads = threads;
    auto r = kforge::dedup::update(**db, opts, kforge::system_clock());
    if (!r.ok()) {
      std::fprintf(stderr, "dedup: %s\n", r.error().message.c_str());
      return std::string("0 0 0 0");
    }
    // CPU time of every thread (user and system): steadier than wall time on a shared machine.
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    return std::to_string(r->pairs) + " " + std::to_string(r->groups) + " " +
           std::to_string(r->grouped) + " " + std::to_string(r->candidates) + " " +
           std::to_string(cpu);
  });
  long pairs = 0, groups = 0, grouped = 0, candidates = 0;
  double cpu = 0;
  std::sscanf(dd.second.c_str(), "%ld %ld %ld %ld %lf", &pairs, &groups, &grouped, &candidates,
              &cpu);
  std::printf("corpus: %ld files, %.0f MB (%ld planted near copies), %s\n", files, mb, planted,
              corpus.c_str());
  std::printf("import (baseline): %.1f s, peak RSS %.0f MB\n", imp.first.first, imp.first.second);
  std::printf(
      "dedup on %d threads: %.1f s (%.0f files/s), %.1f s of CPU, peak RSS %.0f MB; %ld "
      "candidate comparisons (files and kernels), %ld pairs stored (>= 0.5 or linked through "
      "kernels), %ld groups at %.2f holding %ld files\n",
      threads, dd.first.first, static_cast<double>(files) / dd.first.first, cpu, dd.first.second,
      candidates, pairs, groups, kforge::dedup::kDefaultThreshold, grouped);
  std::printf(
      "files=%ld mb=%.0f import_s=%.1f dedup_s=%.1f dedup_cpu_s=%.1f files_per_s=%.0f pairs=%ld "
      "groups=%ld grouped=%ld planted=%ld import_rss_mb=%.0f dedup_rss_mb=%.0f\n",
      files, mb, imp.first.first, dd.first.first, cpu, static_cast<double>(files) / dd.first.first,
      pairs, groups, grouped, planted, imp.first.second, dd.first.second);
  return 0;
}
