-- The speed label (verifier.timing, docs/VERIFIER.md "The speed label"): one row per
-- verification that was timed or tried to be. The figures are the harness's
-- (verifications.result_json "speed" keeps every kernel's times, the environment and the reps):
--   timed             1 when figures were taken; 0 with `reason` (GPU busy, no launch, failed)
--   kernel_us         the sum over the timed kernels of each one's median time on its largest
--                     launch; gbps and fraction_of_peak are the first kernel's bytes/s over its
--                     launch's tensor footprint and its share of the GPU's peak (NULL: unknown GPU)
--   speedup, speedup_lo, speedup_hi
--                     reference median over wrapper median, with its bootstrap 95% interval
--                     (NULL: the sample declared no PyTorch reference)
--   pass_perf         1 when speedup_lo is above min_speedup and nothing is flagged; NULL
--                     without a reference
--   flags_json        perf_suspect, not_reproduced, unseen_work, calls_reference
--   exclusive_ms      the device held exclusively for this sample
CREATE TABLE verification_speed (
  verification_id  INTEGER PRIMARY KEY REFERENCES verifications(id) ON DELETE CASCADE,
  timed            INTEGER NOT NULL CHECK (timed IN (0, 1)),
  reason           TEXT,
  device           TEXT,
  kernel_us        REAL,
  gbps             REAL,
  fraction_of_peak REAL,
  speedup          REAL,
  speedup_lo       REAL,
  speedup_hi       REAL,
  reference_us     REAL,
  min_speedup      REAL,
  pass_perf        INTEGER CHECK (pass_perf IN (0, 1)),
  flags_json       TEXT NOT NULL DEFAULT '[]',
  exclusive_ms     INTEGER
);
