-- kforge schema, version 22: kernel sketches beside each sample's near-duplicate signature, and
-- how each stored pair is linked (libs/dedup signature.hpp `kernel_link`). A file whose kernels
-- are all near-copies of another file's (an embedded kernel, a backend copy that adds a kernel)
-- or whose kernels pair one to one with another's (a revision) is linked to it whatever the
-- similarity of the two files. Signatures of the earlier scheme are computed again at the next
-- kforge corpus dedup, which fills them.
--   dedup_signatures.kernels     per kernel of >= 60 normalised tokens: a helper byte, then 128
--                                little-endian uint16 minimum hashes (identifiers normalised)
--   dedup_signatures.kernelless  1 when the file has no @triton.jit (or Gluon, Triton-distributed)
--                                function at all: compared over all its tokens, at 0.8 or more
--   dedup_pairs.link             0 similarity alone; 1 a's kernels within b's; 2 b's within a's;
--                                3 each within the other; 4 kernels aligned one to one;
--                                5 the same kernel sketches (one class in groups)
ALTER TABLE dedup_signatures ADD COLUMN kernels BLOB NOT NULL DEFAULT x'';
ALTER TABLE dedup_signatures ADD COLUMN kernelless INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dedup_pairs ADD COLUMN link INTEGER NOT NULL DEFAULT 0;
