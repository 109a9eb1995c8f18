#pragma once
// The daemon's /metrics page in the Prometheus text format (version 0.0.4).
//
// The main loop fills a MetricsSnapshot about once a second (job and verdict gauges from the
// database, its own counters, the LLM client's); the HTTP thread serves the latest rendering.

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "kforge/llm/client.hpp"
#include "kforge/pipeline/scheduler.hpp"
#include "kforge/store/db.hpp"

namespace kforge::pipeline {

struct MetricsSnapshot {
  std::map<std::pair<std::string, std::string>, std::int64_t> jobs;  // (run tag, state) -> n
  std::map<std::string, std::int64_t> verdicts;                      // verdict -> n
  SchedulerStats scheduler;
  llm::Stats llm;
  int in_flight = 0;
  bool draining = false;
  double uptime_s = 0;
};

// Fills the database gauges (jobs, verdicts).
Status collect_db_metrics(store::Db& db, MetricsSnapshot& m);

std::string render_prometheus(const MetricsSnapshot& m);

}  // namespace kforge::pipeline
