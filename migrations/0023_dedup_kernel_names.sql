-- kforge schema, version 23: the name and parameter count of each kernel sketched in
-- dedup_signatures.kernels (libs/dedup signature.hpp `kernel_link`, link `named`). A file whose
-- kernels have the same names as another's, each near its namesake and taking as many
-- parameters (a single-kernel revision or backend copy that edits the body and keeps the
-- kernel's interface), is linked to it whatever the similarity of the two files. Signatures of
-- the earlier scheme are computed again at the next kforge corpus dedup, which fills it.
--   dedup_signatures.kernel_names  "name/params" per kernel of dedup_signatures.kernels,
--                                  comma-separated, in the same order
--   dedup_pairs.link               also 6: the kernels named alike (as above)
ALTER TABLE dedup_signatures ADD COLUMN kernel_names TEXT NOT NULL DEFAULT '';
