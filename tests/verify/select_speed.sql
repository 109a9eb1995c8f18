SELECT timed, reason, kernel_us, speedup, speedup_lo, speedup_hi, pass_perf, flags_json,
       min_speedup, exclusive_ms
FROM verification_speed WHERE verification_id = ?1;
