#include "kforge/pipeline/batch_status.hpp"

#include <span>

#include "kforge/pipeline/jobs.hpp"

namespace kforge::pipeline {

Result<std::vector<BatchInFlight>> batches_in_flight(store::Db& db, const std::string& run_tag,
                                                     std::int64_t now_ms) {
  KF_TRY(store::Stmt * s, db.cached(pipeline_queries()["batches_in_flight"]));
  s->bind(1, run_tag);
  std::vector<BatchInFlight> out;
  KF_CHECK(s->each([&](store::Stmt& r) {
    BatchInFlight b;
    b.key = r.text(0);
    b.state = r.text(1);
    b.provider_status = r.text(2);
    b.batch_id = r.text(3);
    b.lines = r.int64(4);
    b.run_lines = r.int64(5);
    b.completed = r.int64(6);
    b.failed = r.int64(7);
    b.poll_errors = r.int64(8);
    b.age_s = std::max<std::int64_t>(0, (now_ms - r.int64(9)) / 1000);
    b.note = r.text(10);
    out.push_back(std::move(b));
  }));
  return out;
}

nlohmann::ordered_json to_json(const BatchInFlight& b) {
  return {{"key", b.key},
          {"state", b.state},
          {"provider_status", b.provider_status},
          {"batch_id", b.batch_id},
          {"lines", b.lines},
          {"run_lines", b.run_lines},
          {"completed", b.completed},
          {"failed", b.failed},
          {"poll_errors", b.poll_errors},
          {"age_s", b.age_s},
          {"note", b.note}};
}

}  // namespace kforge::pipeline
