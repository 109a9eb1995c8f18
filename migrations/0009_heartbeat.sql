-- kforge schema, version 9: daemon liveness. Each kforged start adds a row and beats it while it
-- runs, so `kforge status` can say whether a daemon works this database, since when, and whether
-- the alerts and active runs it shows belong to a live one.
CREATE TABLE daemon_heartbeats (
  id             INTEGER PRIMARY KEY,
  host           TEXT NOT NULL,
  pid            INTEGER NOT NULL,
  owner          TEXT NOT NULL,          -- the lease owner, host:pid (or daemon.owner:pid)
  version        TEXT NOT NULL,          -- kforged's version
  started_ms     INTEGER NOT NULL,
  beat_ms        INTEGER NOT NULL,       -- the last beat
  interval_ms    INTEGER NOT NULL,       -- how often it beats
  metrics        TEXT,                   -- host:port serving /metrics and /healthz; NULL: none
  verifies       INTEGER NOT NULL,       -- 1: it runs the verifier (daemon.verify)
  stopped_ms     INTEGER                 -- a clean exit; NULL while it runs or after a crash
);
