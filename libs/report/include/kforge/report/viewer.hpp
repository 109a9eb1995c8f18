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
// migration 0012), so paging, filtering and sorting a run that is not moving reads no rows.
// It also keeps parts of pages that are costly to make (the runs page's counts of a run, the
// A/B page's comparison), each under a name with the fingerprints it was made from, and gives
// one back only while the fingerprints are the same. Thread-safe.
class ViewCache {
 public:
  explicit ViewCache(std::size_t max_runs = 8, std::size_t max_parts = 64)
      : max_runs_(max_runs), max_parts_(max_parts) {}
  using Outcomes = std::shared_ptr<const std::vector<SampleOutcome>>;
  // The run's cached outcomes when `fingerprint` matches, else null.
  Outcomes find(std::int64_t run_id, const std::string& fingerprint);
  void put(std::int64_t run_id, const std::string& fingerprint, Outcomes outcomes);
  // The part of a page kept under `name` when it was made at `fingerprint`, else null.
  std::shared_ptr<const std::string> find_part(const std::string& name,
                                               const std::string& fingerprint);
  void put_part(const std::string& name, const std::string& fingerprint, std::string text);

 private:
  struct Entry {
    std::int64_t run_id = 0;
    std::string fingerprint;
    Outcomes outcomes;
  };
  struct Part {
    std::string name, fingerprint;
    std::shared_ptr<const std::string> text;
  };
  std::size_t max_runs_, max_parts_;
  std::mutex mu_;
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

}  // namespace kforge::report
