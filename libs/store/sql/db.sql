-- The connection's own SQL (db.hpp).

-- name: data_version
-- Changes when another connection (another process or thread) has committed since this
-- connection last asked; read from the WAL index, without reading a page.
PRAGMA data_version;
