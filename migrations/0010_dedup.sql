-- kforge schema, version 10: near-duplicate groups of the corpus (kforge corpus dedup, import
-- --dedup, run create --dedup). libs/dedup owns these tables.

-- One MinHash signature per sample, computed from the code whose SHA-256 it records: a sample
-- whose code changed, or a signature of another scheme, is computed again.
CREATE TABLE dedup_signatures (
  sample_id    INTEGER PRIMARY KEY REFERENCES samples(id) ON DELETE CASCADE,
  code_sha256  TEXT NOT NULL,
  scheme       TEXT NOT NULL,          -- e.g. 'minhash128-k5-lit-v1' (libs/dedup signature.hpp)
  shingles     INTEGER NOT NULL,       -- distinct token shingles
  kernels_sha  TEXT NOT NULL,          -- hash of the exact @triton.jit kernel bodies
  bodies       TEXT NOT NULL,          -- JSON list of each kernel body's exact hash
  minhash      BLOB NOT NULL           -- 128 little-endian uint32 minimum hashes
);
CREATE INDEX dedup_signatures_kernels ON dedup_signatures(kernels_sha);

-- Every pair of samples at or above the pair floor (0.5), a < b: similarity is the estimated
-- Jaccard similarity of their shingle sets, 1 for the same kernel bodies (exact = 1).
CREATE TABLE dedup_pairs (
  a           INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
  b           INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
  similarity  REAL NOT NULL,
  exact       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (a, b)
) WITHOUT ROWID;
CREATE INDEX dedup_pairs_similarity ON dedup_pairs(similarity);

-- The groups at the threshold of the last kforge corpus dedup (single linkage over the pairs):
-- one row per sample in a group of two or more. group_id is the group's smallest sample id;
-- linked_to and similarity name the member it is most similar to.
CREATE TABLE dedup_groups (
  sample_id   INTEGER PRIMARY KEY REFERENCES samples(id) ON DELETE CASCADE,
  group_id    INTEGER NOT NULL,
  linked_to   INTEGER NOT NULL,
  similarity  REAL NOT NULL,
  exact       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX dedup_groups_group ON dedup_groups(group_id);

-- What the last computation covered.
CREATE TABLE dedup_state (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  scheme       TEXT NOT NULL,
  threshold    REAL NOT NULL,
  samples      INTEGER NOT NULL,
  pairs        INTEGER NOT NULL,
  groups       INTEGER NOT NULL,
  computed_ms  INTEGER NOT NULL
);
