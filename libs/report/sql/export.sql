-- Every job of a run with its sample's record, the latest analysis (the newest answer of a stage
-- of kind analysis, the view stage_output_kinds of migration 0021), the latest code (the newest
-- answer that holds code, the view code_outputs: the code stage's or a repair round's corrected
-- wrapper and test; or an attempt of the code stage newer than it, so a failed generation shows
-- as the sample's latest attempt), and the sample's verification (the view latest_verification,
-- migration 0025), by sample key. "Latest" is the newest row (highest id). From the
-- verification's columns and tables (0025): the kernels its test launched ({name: count}), its
-- test functions, the harness's speed account when the verifier measured one, and the kernel
-- battery's score; the last, the speed label's stored summary (verification_speed, 0020).
-- ?2: a JSON list of keys (--keys, the viewer's download of a filtered list) or NULL for every
-- sample: the other samples' rows are skipped before any of their texts is read.
-- name: export_rows
SELECT s.key, s.record_json, j.state, j.stage,
       an.status, kf_text(an.parsed_text), an.prompt_version, an.prompt_sha256,
       ge.status, kf_text(ge.parsed_text), ge.prompt_version, ge.prompt_sha256,
       v.verdict, v.flags_json, v.detail, ge.repair_round, ge.stage, s.id, s.code,
       kf_text(an.reasoning_text), kf_text(ge.reasoning_text),
       v.mutants_killed, v.mutants_applicable, v.coverage_json,
       (SELECT json_group_object(t.target, t.result) FROM verification_targets t
        WHERE t.verification_id = v.id),
       (SELECT json_group_object(l.kernel, l.launches)
        FROM (SELECT kernel, launches FROM verification_launches
              WHERE verification_id = v.id ORDER BY ordinal) l),
       (SELECT json_group_array(t.name)
        FROM (SELECT name FROM verification_tests WHERE verification_id = v.id ORDER BY ordinal) t),
       v.speed_json, v.kernel_killed, v.kernel_applicable, v.kernel_equivalent,
       v.kernel_survived_json,
       (SELECT json_object('timed', json(CASE sp.timed WHEN 1 THEN 'true' ELSE 'false' END),
                           'kernel_us', sp.kernel_us, 'gbps', sp.gbps,
                           'fraction_of_peak', sp.fraction_of_peak, 'speedup', sp.speedup,
                           'speedup_ci', CASE WHEN sp.speedup_lo IS NULL THEN NULL
                                         ELSE json_array(sp.speedup_lo, sp.speedup_hi) END,
                           'pass_perf', json(CASE sp.pass_perf WHEN 1 THEN 'true'
                                             WHEN 0 THEN 'false' ELSE 'null' END),
                           'min_speedup', sp.min_speedup, 'flags', json(sp.flags_json),
                           'device', sp.device, 'reason', sp.reason)
        FROM verification_speed sp WHERE sp.verification_id = v.id)
FROM jobs j
JOIN samples s ON s.id = j.sample_id
LEFT JOIN stage_outputs an ON an.id = (
  SELECT max(o.id) FROM stage_output_kinds o
  WHERE o.run_id = j.run_id AND o.sample_id = j.sample_id AND o.kind = :stage_kind_analysis)
LEFT JOIN stage_outputs ge ON ge.id = max(
  coalesce((SELECT max(c.id) FROM code_outputs c
            WHERE c.run_id = j.run_id AND c.sample_id = j.sample_id), 0),
  coalesce((SELECT max(o.id) FROM stage_output_kinds o
            WHERE o.run_id = j.run_id AND o.sample_id = j.sample_id AND o.kind = :stage_kind_code), 0))
LEFT JOIN latest_verification v ON v.run_id = j.run_id AND v.sample_id = j.sample_id
WHERE j.run_id = ?1 AND (?2 IS NULL OR s.key IN (SELECT value FROM json_each(?2)))
ORDER BY s.key;
