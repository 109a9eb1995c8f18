-- A verification and what readers take from its report (migration 0025), in one row.
-- name: insert_verification
INSERT INTO verifications (job_id, run_id, sample_id, attempt, verdict, flags_json, detail,
                           result_json, script, stderr_tail, duration_ms, device, created_ms,
                           repair_round, mutants_killed, mutants_applicable, kernel_killed,
                           kernel_applicable, kernel_equivalent, kernel_survived_json,
                           coverage_json, speed_json, out_of_bounds, bounds_detail,
                           mutants_survived_json, mutants_not_applicable_json)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
        ?21, ?22, ?23, ?24, ?25, ?26);

-- name: insert_test
INSERT INTO verification_tests (verification_id, ordinal, name, status, section, line)
VALUES (?1, ?2, ?3, ?4, ?5, ?6);

-- name: insert_launches
INSERT INTO verification_launches (verification_id, ordinal, kernel, launches)
VALUES (?1, ?2, ?3, ?4);

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

-- name: clear_devices
DELETE FROM verifier_devices;

-- name: insert_target
INSERT INTO verification_targets (verification_id, target, result, error, kernel)
VALUES (?1, ?2, ?3, ?4, ?5);

-- name: insert_speed
INSERT INTO verification_speed (verification_id, timed, reason, device, kernel_us, gbps,
                                fraction_of_peak, speedup, speedup_lo, speedup_hi, reference_us,
                                min_speedup, pass_perf, flags_json, exclusive_ms,
                                kernel_share)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16);
