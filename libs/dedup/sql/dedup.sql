-- Named statements of libs/dedup (tables of migrations/0010_dedup.sql, 0016_dedup_ops.sql,
-- 0022_dedup_kernels.sql and 0023_dedup_kernel_names.sql).

-- Samples without a current signature: none yet, another code, or another scheme.
-- name: stale_samples
SELECT s.id FROM samples s
LEFT JOIN dedup_signatures d ON d.sample_id = s.id
WHERE d.sample_id IS NULL OR d.code_sha256 != s.code_sha256 OR d.scheme != ?1
ORDER BY s.id;

-- name: sample_code
SELECT code, code_sha256 FROM samples WHERE id = ?1;

-- name: upsert_signature
INSERT INTO dedup_signatures(sample_id, code_sha256, scheme, shingles, kernels_sha, bodies, minhash,
  ops, kernels, kernelless, kernel_names, small_kernels)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
ON CONFLICT(sample_id) DO UPDATE SET code_sha256 = excluded.code_sha256,
  scheme = excluded.scheme, shingles = excluded.shingles, kernels_sha = excluded.kernels_sha,
  bodies = excluded.bodies, minhash = excluded.minhash, ops = excluded.ops,
  kernels = excluded.kernels, kernelless = excluded.kernelless,
  kernel_names = excluded.kernel_names, small_kernels = excluded.small_kernels;

-- name: all_signatures
SELECT sample_id, shingles, kernels_sha, minhash, code_sha256, kernels, kernelless, kernel_names,
  small_kernels, bodies
FROM dedup_signatures WHERE scheme = ?1 ORDER BY sample_id;

-- name: count_samples
SELECT count(*) FROM samples;

-- name: delete_pairs
DELETE FROM dedup_pairs;

-- name: insert_pair
INSERT INTO dedup_pairs(a, b, similarity, exact, link) VALUES (?1, ?2, ?3, ?4, ?5);

-- The pairs at or above a threshold or linked through kernels, with each side's code hash
-- (groups order samples by it), the operations of each side's kernels (groups do not link
-- conflicting ones) and whether each side has no kernel (such pairs need more similarity).
-- name: pairs_at
SELECT p.a, p.b, p.similarity, p.exact, sa.code_sha256, sb.code_sha256,
  coalesce(da.ops, ''), coalesce(db.ops, ''), p.link,
  coalesce(da.kernelless, 0), coalesce(db.kernelless, 0) FROM dedup_pairs p
JOIN samples sa ON sa.id = p.a JOIN samples sb ON sb.id = p.b
LEFT JOIN dedup_signatures da ON da.sample_id = p.a
LEFT JOIN dedup_signatures db ON db.sample_id = p.b
WHERE p.similarity >= ?1 OR p.link != 0 ORDER BY p.a, p.b;

-- name: sample_facts
SELECT key, length(CAST(code AS BLOB)), code_sha256 FROM samples WHERE id = ?1;

-- name: count_grouped
SELECT count(*) FROM dedup_groups;

-- name: delete_groups
DELETE FROM dedup_groups;

-- name: insert_group_member
INSERT INTO dedup_groups(sample_id, group_id, linked_to, similarity, exact)
VALUES (?1, ?2, ?3, ?4, ?5);

-- name: get_state
SELECT scheme, threshold, samples, pairs, groups, computed_ms FROM dedup_state WHERE id = 1;

-- name: put_state
INSERT INTO dedup_state(id, scheme, threshold, samples, pairs, groups, computed_ms)
VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT(id) DO UPDATE SET scheme = excluded.scheme, threshold = excluded.threshold,
  samples = excluded.samples, pairs = excluded.pairs, groups = excluded.groups,
  computed_ms = excluded.computed_ms;

