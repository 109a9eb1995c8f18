-- Cross-compilation (verifier.cross_compile, docs/VERIFIER.md "Other targets"): after a passing
-- run, every kernel the test launched was compiled for each target (e.g. hip:gfx942) with
-- Triton's own backend for it; nothing ran there. One row per verification and target:
--   ok           every launched specialisation compiled;
--   error        one did not: `error` holds the stage and the compiler's first lines, `kernel`
--                the first kernel that failed;
--   unavailable  this Triton has no backend for the target (`error` says why); not a failure;
--   not_run      no launch of the sample's kernels was captured.
-- The full account (each specialisation, its signature, constexprs and options) stays in
-- verifications.result_json under "cross_compile".
CREATE TABLE verification_targets (
  verification_id INTEGER NOT NULL REFERENCES verifications(id) ON DELETE CASCADE,
  target          TEXT NOT NULL,
  result          TEXT NOT NULL CHECK (result IN ('ok', 'error', 'unavailable', 'not_run')),
  error           TEXT,
  kernel          TEXT,
  PRIMARY KEY (verification_id, target)
);
CREATE INDEX verification_targets_target ON verification_targets(target, result);
