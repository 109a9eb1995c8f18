#pragma once
// Storing what the verifier decided: one row of `verifications` per attempt, and the state of
// the verifier's devices (for `kforge status`).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kforge/store/db.hpp"
#include "kforge/verify/pool.hpp"
#include "kforge/verify/speed.hpp"
#include "kforge/verify/verdict.hpp"

namespace kforge::verify {

struct VerificationKey {
  std::optional<std::int64_t> job_id;
  std::int64_t run_id = 0;
  std::int64_t sample_id = 0;
  int attempt = 1;
  int repair_round = 0;  // the pipeline's repair round whose code this verdict judges
};

// Inserts one row into `verifications`: verdict, flags, detail, the full report (result_json),
// the exact script, the stderr tail, duration and device. Returns the row id. Does not open a
// transaction: the caller wraps it with its job-state update when both must land together.
Result<std::int64_t> store_verification(store::Db& db, const VerificationKey& key,
                                        const VerifyResult& result, std::int64_t now_ms);

// The speed label's row (verification_speed, migration 0020); store_verification calls it for
// every result whose report has one.
Status store_speed(store::Db& db, std::int64_t verification_id, const SpeedLabel& label);

// Records each device's state (insert or update).
Status store_device_status(store::Db& db, const std::vector<DeviceStatus>& devices,
                           std::int64_t now_ms);
// Replaces every row with `devices` (a daemon's pool at its start: rows of an earlier
// configuration go), in one transaction.
Status replace_device_status(store::Db& db, const std::vector<DeviceStatus>& devices,
                             std::int64_t now_ms);

struct DeviceAlert {
  std::string device;
  int start_failures = 0;
  std::string reason;
  std::int64_t updated_ms = 0;
};

// Devices out of rotation. An empty list when the table holds none (or does not exist yet).
Result<std::vector<DeviceAlert>> device_alerts(store::Db& db);

const store::QuerySet& verify_queries();

}  // namespace kforge::verify
