-- The connection's own SQL (db.hpp).

-- name: data_version
-- Changes when another connection (another process or thread) has committed since this
-- connection last asked; read from the WAL index, without reading a page.
PRAGMA data_version;

-- The connection's FTS5 API (the pointer is bound to ?1; SQLite's documented way to reach it),
-- for kf_search_holds (store/search_match.hpp).
-- name: fts5_api
SELECT fts5(?1);
