-- kforge schema, version 4: the verifier's devices, so `kforge status` can show a GPU that was
-- taken out of rotation (its workers kept failing to start).
CREATE TABLE verifier_devices (
  device         TEXT PRIMARY KEY,             -- 'cuda:0', 'rocm:1', 'cpu'
  in_rotation    INTEGER NOT NULL DEFAULT 1,   -- 0: taken out after repeated start failures
  workers        INTEGER NOT NULL DEFAULT 0,
  ready_workers  INTEGER NOT NULL DEFAULT 0,
  start_failures INTEGER NOT NULL DEFAULT 0,   -- consecutive
  reason         TEXT,                         -- why it left the rotation
  updated_ms     INTEGER NOT NULL
);
