-- name: insert_verification
INSERT INTO verifications (job_id, run_id, sample_id, attempt, verdict, flags_json, detail,
                           result_json, script, stderr_tail, duration_ms, device, created_ms,
                           repair_round, mutants_killed, mutants_applicable)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16);

-- name: upsert_device
INSERT INTO verifier_devices (device, in_rotation, workers, ready_workers, start_failures, reason,
                              updated_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (device) DO UPDATE SET in_rotation = excluded.in_rotation,
  workers = excluded.workers, ready_workers = excluded.ready_workers,
  start_failures = excluded.start_failures, reason = excluded.reason,
  updated_ms = excluded.updated_ms;

-- name: devices_out_of_rotation
SELECT device, start_failures, reason, updated_ms FROM verifier_devices
WHERE in_rotation = 0 ORDER BY device;

-- name: all_devices
SELECT device, in_rotation, workers, ready_workers, start_failures, reason, updated_ms
FROM verifier_devices ORDER BY device;

-- name: clear_devices
DELETE FROM verifier_devices;

-- name: insert_target
INSERT INTO verification_targets (verification_id, target, result, error, kernel)
VALUES (?1, ?2, ?3, ?4, ?5);

-- name: insert_speed
INSERT INTO verification_speed (verification_id, timed, reason, device, kernel_us, gbps,
                                fraction_of_peak, speedup, speedup_lo, speedup_hi, reference_us,
                                min_speedup, pass_perf, flags_json, exclusive_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15);
