-- kforge schema, version 16: the operations of each sample's kernels, beside its near-duplicate
-- signature (libs/dedup signature.hpp `ops`). Corpus groups do not link two samples whose
-- kernels compute different operations (one template around log and around sqrt), however
-- similar their tokens. Signatures of the earlier scheme are computed again at the next
-- kforge corpus dedup, which fills it.
ALTER TABLE dedup_signatures ADD COLUMN ops TEXT NOT NULL DEFAULT '';
