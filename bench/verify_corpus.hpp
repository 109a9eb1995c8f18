#pragma once
// kforge-bench-verify --corpus: the real-kernel benchmark (docs/BENCHMARKS.md). A corpus of real
// Triton kernels with their tests (TritonBench-G gold tests), copied N times with every
// @triton.jit function renamed per copy so that each sample compiles its own kernels, run:
//   1. as a user's own script would: a plain `python sample.py` per sample, P at once, full
//      autotuning, one cold Triton cache shared by the pass;
//   2. through kforge's warm pool (cold cache), then again over the cache it filled;
//   3. optionally over several worker counts (a sweep; "auto" among them).
// Each measurement prints one line as it ends; the last line holds the figures as key=value.

#include <cstdint>
#include <string>
#include <vector>

namespace kforge::bench {

struct CorpusBenchOptions {
  std::string corpus;
  int copies = 2;
  std::vector<std::string> exclude;  // record keys left out
  std::int64_t limit = 0;            // first N records only (0: all)
  double timeout_s = 120;
  int naive_procs = 16;            // 0: no plain-python baseline
  std::string workers = "auto";    // per GPU for the main warm run: auto or a number
  std::vector<std::string> sweep;  // per GPU: "auto" or numbers
  bool cached = true;              // the second pass over a filled cache
  // Once more, cold, with the driver's default hardware queues per context (gpu_hw_queues 0):
  // the A/B of verifier.gpu_hw_queues.
  bool hw_queues_ab = false;
  // Once more, cold, without the output mutants (verifier.mutants: []; the skip-launch run
  // stays): the cost of the battery.
  bool mutants_ab = false;
  // Once more, cold, without the out-of-bounds check (verifier.bounds_check: false): its cost.
  bool bounds_ab = false;
  // Once more, cold, with the speed label (verifier.timing.enabled): its throughput against the
  // warm run's, and the exclusive GPU time per sample.
  bool timing_ab = false;
  // Once more, cold, with the first target of verifier.cross_compile, and once with all of them
  // (e.g. hip:gfx942,hip:gfx90a): the cost of cross-compiling per sample (docs/BENCHMARKS.md).
  std::vector<std::string> cross_compile;
  std::vector<std::string> devices;  // empty: detect
  std::string python = "python3";
  std::int64_t sandbox_uid_base = 61000;
  std::string work_dir;
  std::string samples_out;  // per-sample JSON Lines (optional)
  std::string autotune = "single";
  std::string emit;  // write the renamed samples here (JSON Lines, kforge verify's input); no run
  // A kforge configuration file whose `verifier:` section (read strictly, KFORGE_VERIFIER_*
  // overrides included) every kforge run starts from, before the options above.
  std::string config;
  // More samples (JSON Lines or a list, as the corpus; not renamed, not copied) spread evenly
  // among the corpus's, e.g. faulting kernels beside good ones (scripts/gpu/bench-mps).
  std::string mix;
};

int run_corpus_bench(const CorpusBenchOptions& o);

}  // namespace kforge::bench
