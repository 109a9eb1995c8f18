-- kforge schema, version 23: what links a revision, a backend copy or a port of a kernel file to
-- the original when the files differ too much (libs/dedup signature.hpp `kernel_link`).
--  - Kernels named alike (link `named`): a file whose kernels have the same names as another's,
--    each near its namesake and taking as many parameters (a single-kernel revision or backend
--    copy that edits the body and keeps the kernel's interface).
--  - The same small kernels (link `small`): files whose @jit functions are all one-liners below
--    the kernel floor, the same as written, and whose files are at least 0.5 similar.
-- Signatures of the earlier scheme are computed again at the next kforge corpus dedup, which
-- fills the new columns.
--   dedup_signatures.kernel_names   "name/params" per kernel of dedup_signatures.kernels,
--                                   comma-separated, in the same order
--   dedup_signatures.small_kernels  16 hex digits: a hash of the file's @jit functions when all
--                                   are below the kernel floor; '' otherwise
--   dedup_pairs.link                also 6: kernels named alike; 7: the same small kernels
ALTER TABLE dedup_signatures ADD COLUMN kernel_names TEXT NOT NULL DEFAULT '';
ALTER TABLE dedup_signatures ADD COLUMN small_kernels TEXT NOT NULL DEFAULT '';
