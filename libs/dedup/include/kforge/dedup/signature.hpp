#pragma once
// What near-duplicate detection knows of one kernel file: a MinHash signature of its normalised
// token shingles and exact hashes of its @triton.jit kernel bodies.
//
// Normalisation: the code is read as Python tokens; comments and whitespace are dropped, every
// string literal becomes one `S` token and every number one `N` token; identifiers, keywords and
// operators are kept. So renaming a variable changes the signature a little, while reformatting,
// editing comments and changing a constant or a block size barely do.
//
// Shingles are kShingle consecutive tokens; the signature holds kPermutations minimum hashes.
// Two signatures agree in a fraction of their slots that estimates the Jaccard similarity of the
// two shingle sets (standard error about 0.04 at 128 slots).
//
// Kernel bodies: each function decorated with @triton.jit or @jit (whatever decorators follow),
// from its `def` to its last indented line, hashed over its tokens with literals kept (only
// comments and whitespace dropped). `kernels_sha` hashes the sorted body hashes: two files with
// the same kernels, whatever else they contain, share it.
//
// Pure functions, thread-safe.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::dedup {

inline constexpr int kShingle = 5;
inline constexpr int kPermutations = 128;
inline constexpr int kBands = 32;  // LSH: kBands bands of kRows slots
inline constexpr int kRows = kPermutations / kBands;
// Names the parameters above and the normalisation; a stored signature with another name is
// recomputed.
inline constexpr std::string_view kScheme = "minhash128-k5-lit-v1";

// The normalised tokens of Python source, as text ("S" and "N" for literals).
std::vector<std::string_view> normalised_tokens(std::string_view code);

struct Signature {
  std::array<std::uint32_t, kPermutations> minhash{};
  std::int64_t shingles = 0;  // distinct shingles; 0 for code without tokens
  // Exact hashes (16 hex digits) of each kernel body with at least kMinBodyTokens tokens.
  std::vector<std::string> bodies;
  std::string kernels_sha;  // of the sorted body hashes; of the whole token stream when none
};

inline constexpr int kMinBodyTokens = 20;

Signature compute_signature(std::string_view code);

// Kernel-level signatures, for decontamination: each @triton.jit function's body on its own, with
// literals normalised as above and every identifier that names something of the kernel's own
// (its name, parameters, variables, helpers it calls) written `V`; keywords, a few builtins
// (range, min, max, ...), attribute names (`.load`, `.program_id`) and the modules kernels call
// through (tl, triton, torch, math, libdevice) are kept. So renaming a kernel or its variables
// leaves its kernel signature as it was, reformatting and comments too, and a kernel embedded in
// a larger file has the same signature as alone.
struct KernelSignature {
  std::string name;  // as written after `def`
  int tokens = 0;    // normalised tokens, from `def` to the body's end
  std::string body;  // hash of those tokens (16 hex digits): the same kernel up to renames
  Signature sig;     // minhash and shingles of those tokens (bodies and kernels_sha unused)
};

// Kernels below this many normalised tokens (a five-line helper such as a prev_multiple_of has
// about 25) are left out by default: sharing one says nothing about contamination.
inline constexpr int kMinKernelTokens = 60;

// The kernels of `code` with at least min_tokens normalised tokens, in file order.
std::vector<KernelSignature> kernel_signatures(std::string_view code,
                                               int min_tokens = kMinKernelTokens);

// The estimated Jaccard similarity of the two shingle sets, in [0, 1]; 0 when either is empty.
double similarity(const Signature& a, const Signature& b);

// The hash of LSH band `band` (0 <= band < kBands) of a signature.
std::uint64_t band_hash(const Signature& s, int band);

// Signature <-> the BLOB stored in dedup_signatures.minhash (little-endian uint32s).
std::string minhash_blob(const Signature& s);
bool minhash_from_blob(std::string_view blob, Signature& s);

}  // namespace kforge::dedup
