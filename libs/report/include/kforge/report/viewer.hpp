#pragma once
// The sample viewer's pages (`kforge serve`): server-rendered HTML over the database, read only.
//
//   /                     the runs: progress, phase, verdict and flag counts, cost; an A/B form
//   /run?tag=T&...        a run's samples, filtered (verdict: the outcome category, flag,
//                         failure: "stage/error_kind", round, cause, q: words each in the key
//                         or in a text of the sample: code, description, wrapper, test,
//                         verifier detail, through migration 0036's search_text), group (a
//                         near-duplicate group's id), sorted by a click on a column
//                         (sort=key|outcome|round|speedup|mutation|share|group|tokens|cost,
//                         desc=1) and paged (page=N); with the commands that export or retry
//                         what it shows (-c the configuration in use, --keys the listed keys)
//   /keys?tag=T&...       the keys the samples page with the same filter lists, one a line
//   /export?tag=T&...&format=F  its rows as a JSON Lines download: F jsonl (kforge's records),
//                         sft, prompt-completion, trajectory or rl (export.hpp)
//   /sample?tag=T&key=K   one sample: code, analysis, every round's wrapper and test with the
//                         differences from the round before, verdicts, failing line, mutants,
//                         coverage, cross-compile results, reasoning, tokens, cost, the command
//                         that reproduces it, its near-duplicate group; show=N: round N alone
//   /ab?a=T&b=T           two runs on the samples both finished: the flips each way
//   /style.css            the one stylesheet (the pages load nothing else, and run no script)
//
// Every text read from the database goes through html_escape (escape.hpp). Pure over the Db it
// is given: no HTTP here (apps/kforge/cmd_serve.cpp serves it). Not thread-safe: one Db per
// thread.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kforge/store/db.hpp"

namespace kforge::report {

struct ViewRequest {
  std::string path;                           // e.g. "/run"
  std::map<std::string, std::string> params;  // the query's parameters, decoded
};

struct ViewResponse {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
  // A download's file name (Content-Disposition: attachment), letters, digits, '-', '_' and '.'
  // only; "" for a page.
  std::string filename;
};

struct SampleOutcome;

// The outcomes of the runs pages showed last, shared by the threads that serve pages: a run's
// outcomes are read again only when its fingerprint changed (its jobs by state and stage, the
// newest job update, its stage outputs and verdicts by kind, from the trigger-kept counts of
// migration 0012), so paging, filtering and sorting a run that is not moving reads no rows. A
// run that moved (kforged working on it) is read again only for the samples that changed since
// (migration 0050's outcome_changes), not whole.
// It also keeps parts of pages that are costly to make (the runs page's counts of a run, the
// A/B page's comparison), each under a name with the fingerprints it was made from, and gives
// one back only while the fingerprints are the same. Thread-safe.
class ViewCache {
 public:
  explicit ViewCache(std::size_t max_runs = 8, std::size_t max_parts = 64)
      : max_runs_(max_runs), max_parts_(max_parts) {}
  using Outcomes = std::shared_ptr<const std::vector<SampleOutcome>>;
  // Outcomes as the cache keeps them: pages see them const (Outcomes); the one that updates a
  // run it took (take) and alone holds may change them in place.
  using Kept = std::shared_ptr<std::vector<SampleOutcome>>;
  // A run's outcomes as kept: read at `fingerprint`, holding every change up to the run's
  // change number `mark` (outcome_change_mark; -1: unknown), with the near-duplicate groups
  // computed at `dedup`.
  struct Entry {
    std::int64_t run_id = 0;
    std::string fingerprint;
    Kept outcomes;
    std::int64_t mark = -1;
    std::string dedup;
  };
  // The run's cached outcomes when `fingerprint` matches, else null.
  Outcomes find(std::int64_t run_id, const std::string& fingerprint);
  // The run's kept outcomes whatever their fingerprint, when their change number is known: what
  // a read of the samples changed since updates.
  std::optional<Entry> kept(std::int64_t run_id);
  // The same entry taken out of the cache (the cache no longer holds it): when no page holds
  // its outcomes either (use_count 1), the taker may update them in place instead of copying
  // them (copy-on-write: a page still showing them keeps them as they were).
  std::optional<Entry> take(std::int64_t run_id);
  // Keeps a run's outcomes; `whole`: read whole (reads()), else updated from a kept entry by
  // the samples that changed (updates(); `in_place`: without a copy, updates_in_place()).
  void put(std::int64_t run_id, const std::string& fingerprint, Kept outcomes,
           std::int64_t mark = -1, const std::string& dedup = "", bool whole = true,
           bool in_place = false);
  // The part of a page kept under `name` when it was made at `fingerprint`, else null.
  std::shared_ptr<const std::string> find_part(const std::string& name,
                                               const std::string& fingerprint);
  void put_part(const std::string& name, const std::string& fingerprint, std::string text);
  // Held while a run's outcomes are read for the cache: a page that wants a run another page
  // (or warm_cache) is reading waits for that read and takes its result, rather than reading
  // the run a second time beside it.
  std::shared_ptr<std::mutex> read_lock(std::int64_t run_id);
  // How many times put() kept a run's outcomes read whole: the whole reads from the database.
  std::int64_t reads() const;
  // How many times put() kept a run's outcomes updated by the samples that changed.
  std::int64_t updates() const;
  // How many of those updates changed the kept outcomes in place (no page held them).
  std::int64_t updates_in_place() const;

 private:
  struct Part {
    std::string name, fingerprint;
    std::shared_ptr<const std::string> text;
  };
  std::size_t max_runs_, max_parts_;
  mutable std::mutex mu_;
  std::int64_t reads_ = 0, updates_ = 0, in_place_ = 0;
  std::map<std::int64_t, std::shared_ptr<std::mutex>> read_locks_;
  std::vector<Entry> entries_;  // most recently used last
  std::vector<Part> parts_;     // most recently used last
};

struct ViewOptions {
  std::int64_t now_ms = 0;     // stamped on pages
  int page_size = 50;          // samples per page
  int refresh_seconds = 10;    // pages of an active run reload themselves this often; 0: never
  double confidence = 0.95;    // of the A/B page's interval and test (report.confidence)
  ViewCache* cache = nullptr;  // none: every page reads the outcomes it shows
  std::string config_path;     // the configuration in use: the commands pages show carry -c it
};

// The page for a request. Never fails: an unknown path is a 404 page, a bad parameter a 400
// page naming it, an unknown tag or key a 404 page naming it, a database error a 500 page.
ViewResponse view(store::Db& db, const ViewRequest& req, const ViewOptions& opts);

// Fills opts.cache (which must be set) as the first pages would: the runs page's lines of every
// run, then the outcomes of the `runs` newest runs (newest first; two: the A/B form's default
// pair). kforge serve calls it on a thread of its own as it starts, so the first samples page of
// a recent run finds its outcomes read; a page asking for a run while it is read waits for that
// read (ViewCache::read_lock). Returns how many runs' outcomes it read.
Result<int> warm_cache(store::Db& db, const ViewOptions& opts, int runs = 2);

}  // namespace kforge::report
