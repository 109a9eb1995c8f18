-- The texts table (migrations/0015_texts.sql), read and written only through store/texts.hpp
-- and the kf_text() / kf_put() SQL functions it registers.

-- name: text_id_by_sha
SELECT id FROM texts WHERE sha256 = ?1;

-- name: insert_text
INSERT INTO texts (sha256, size, codec, dict, body) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (sha256) DO NOTHING;

-- name: text_by_id
SELECT t.codec, t.size, t.body, t.dict, d.sha256 FROM texts t LEFT JOIN texts d ON d.id = t.dict
WHERE t.id = ?1;

-- The latest registered (a subquery, not a join: the planner must not walk `texts`).
-- name: current_dictionary
SELECT d.text_id, (SELECT t.sha256 FROM texts t WHERE t.id = d.text_id) FROM text_dictionaries d
ORDER BY d.used_ms DESC, d.text_id DESC LIMIT 1;

-- name: use_dictionary
INSERT INTO text_dictionaries (text_id, used_ms) VALUES (?1, ?2)
ON CONFLICT (text_id) DO UPDATE SET used_ms = excluded.used_ms;
