#pragma once
// RecordRun: the verifier over records that are not in the database (kforge verify FILE). The
// caller reads the records and submits one request per record; the run tallies the verdicts,
// flags and cross-compile results, keeps the slowest samples, and writes one JSON line per
// record: a summary line (index, key, verdict, detail, flags, the figures of figures.hpp,
// mutation, coverage, speed, cross_compile) in record order (each flushed once its turn comes),
// or with `full` the verdict line of
// verdict_line.hpp (what a Slurm array task writes and reads back) as each record finishes.
// summary() is the text kforge verify prints at the end.
//
// Records no longer wanted (`unwanted`: a Slurm array task's skip file, which kforged writes when
// a scored item's deadline passed or its client went away) are withdrawn: one not yet started
// never starts, one running is stopped (Pool::cancel kills its process group), and neither gets
// a line, so the run's other records go on and end as usual.
//
// Threads: as Pool, one thread; callbacks run inside the pool's step().

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "kforge/core/result.hpp"
#include "kforge/verify/pool.hpp"

namespace kforge::verify {

struct RecordRunOptions {
  int slowest = 10;   // how many of the slowest samples to keep (0: none)
  bool full = false;  // write verdict lines as records finish instead of summary lines in order
  PoolMode mode = PoolMode::warm;          // for the summary
  std::vector<std::string> cross_compile;  // the targets asked for (verifier.cross_compile)
  std::string code_field = "code";         // the records' field holding the code
  // Called after each record finishes: lines written, records submitted. Optional.
  std::function<void(std::int64_t written, std::int64_t total)> progress;
  // The indices of records no longer wanted, asked again every `unwanted_every` while the run
  // lasts (an index once listed stays withdrawn). Optional.
  std::function<std::vector<std::int64_t>()> unwanted;
  std::chrono::milliseconds unwanted_every{500};
};

// A slow sample: its record index, key and figures (figures.hpp, plus total_ms: the real run's
// time and the mutant run's).
struct SlowSample {
  std::int64_t index = 0;
  std::string key;
  nlohmann::json figures;
};

// What the run's records came to.
struct RecordTally {
  std::map<Verdict, std::int64_t> by_verdict;
  std::map<std::string, std::int64_t> by_flag;
  // target -> result (ok, error, unavailable, not_run) -> samples
  std::map<std::string, std::map<std::string, std::int64_t>> by_target;
  std::int64_t verified = 0;  // passed, no flag
  std::int64_t total = 0;     // records submitted
  std::int64_t no_code = 0;   // records without the code field
  // Records withdrawn (RecordRunOptions::unwanted): never started, or stopped while they ran.
  std::int64_t withdrawn = 0;
  std::int64_t stopped = 0;  // of those, the ones stopped while they ran
  // The speed label's exclusive sections (harness gpulock.py) and how many of them stopped the
  // device's other samples (a burst's first; the others of a burst began without a stall).
  std::int64_t timed_sections = 0;
  std::int64_t stalls = 0;
  std::vector<SlowSample> slowest;  // longest first
};

class RecordRun {
 public:
  // `pool` must outlive the run; `out` (may be null: no lines) receives the JSON lines.
  RecordRun(Pool& pool, RecordRunOptions opts, std::ostream* out);
  RecordRun(const RecordRun&) = delete;
  RecordRun& operator=(const RecordRun&) = delete;

  // Submits a record's request, stepping the pool while its queue is full. `index`: the
  // record's position in the file, which orders the summary lines (each index once, from 0).
  Status submit(std::int64_t index, VerifyRequest req);
  // Waits for every submitted record (withdrawing those no longer wanted meanwhile).
  void finish();

  const RecordTally& tally() const { return tally_; }
  // The text printed at the end: records, throughput, verdicts, flags, cross-compile results,
  // skipped records, workers, the slowest samples, devices out of rotation. `file` names the
  // input; `secs` the run's wall time.
  std::string summary(const std::string& file, double secs) const;

 private:
  void on_result(std::int64_t index, VerifyResult&& r);
  // Asks opts_.unwanted (at most every unwanted_every) and cancels the newly listed records the
  // pool holds.
  void look_unwanted();
  // A record that gets no line: its place in the summary lines' order is passed over.
  void withdraw(std::int64_t index);
  nlohmann::ordered_json summary_line(std::int64_t index, const VerifyResult& r,
                                      const nlohmann::json& figures);
  void note_slow(std::int64_t index, const VerifyResult& r, nlohmann::json figures);
  void flush();

  Pool& pool_;
  RecordRunOptions opts_;
  std::ostream* out_;
  RecordTally tally_;
  std::int64_t written_ = 0;
  std::int64_t passed_over_ = 0;  // withdrawn records whose place in the order was passed
  // Results arrive out of order; summary lines are written in record order (a withdrawn
  // record's entry is null: no line).
  std::map<std::int64_t, nlohmann::ordered_json> pending_;
  std::map<std::int64_t, std::uint64_t> in_pool_;  // record index -> pool id, until its result
  std::set<std::int64_t> unwanted_;                // indices listed by opts_.unwanted
  std::chrono::steady_clock::time_point looked_{};
  // Expires with the run: the pool's callbacks of a run destroyed first do nothing.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace kforge::verify
