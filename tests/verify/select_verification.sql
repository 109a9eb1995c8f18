SELECT verdict, flags_json, detail, result_json, script, duration_ms, device, attempt
FROM verifications WHERE id = ?1;
