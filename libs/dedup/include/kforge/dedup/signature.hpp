#pragma once
// What near-duplicate detection knows of one kernel file: a MinHash signature of its kernels'
// normalised token shingles, hashes of its @triton.jit kernel bodies up to renames, and the
// operations its kernels compute.
//
// Normalisation: the code is read as Python tokens; comments and whitespace are dropped, every
// string literal becomes one `S` token and every number one `N` token; keywords and operators
// are kept. Kernels: each function decorated with @triton.jit or @jit (whatever decorators
// follow), from its `def` to its last indented line, with every identifier that names something
// of the kernel's own written `V` (as for kernel signatures below).
//
// The MinHash signature covers the file's kernels only (shingles taken kernel by kernel), so a
// kernel re-packaged with other host code, renamed, reformatted or commented keeps its
// signature; a file whose kernels have fewer than kMinKernelShingles shingles (none, or a
// one-line pointwise body) is signed over all its tokens instead, identifiers kept. Shingles are
// kShingle consecutive tokens; the signature holds kPermutations minimum hashes. Two signatures
// agree in a fraction of their slots that estimates the Jaccard similarity of the two shingle
// sets (standard error about 0.04 at 128 slots).
//
// Kernel bodies: hashed over their tokens with the kernel's own identifiers normalised and
// literals kept. `kernels_sha` hashes the sorted body hashes: two files with the same kernels up
// to renames, whatever else they contain, share it.
//
// Operations (`ops`): what the kernels compute on values, for telling one template around two
// operations apart (ops.cpp): the tl/libdevice/math functions they call (loads, stores, indexing,
// casts and shape functions left out), and their arithmetic, bitwise and comparison operators and
// `and`/`or`/`not` where an operand is data (loaded through a block of pointers, an atomic's
// result, random numbers, or a name assigned from them) and the result flows into a stored,
// atomically applied or returned value, or into a pointer (a gather); a constant stored as it is
// (`=1`, `=0`). Index arithmetic is left out: pointer offsets, masks, program ids, aranges, loop
// bounds and conditions, and lengths loaded through a scalar pointer. A libdevice division
// (`fdiv`, `div_rn`) counts as `/`. A function that neither loads nor stores (a pointwise body, a
// combine function) computes on its parameters.
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
inline constexpr std::string_view kScheme = "minhash128-k5-kernels-v9";
// Below this many kernel shingles a file is signed over all its tokens.
inline constexpr int kMinKernelShingles = 30;

// The normalised tokens of Python source, as text ("S" and "N" for literals), formatting neutral
// (grouping parentheses and commas before a closing bracket dropped, `else : if` as `elif`).
std::vector<std::string_view> normalised_tokens(std::string_view code);
// The same as written: comments and whitespace dropped, literals "S" and "N", nothing else
// changed (what the 100,000-file benchmark renames identifiers from).
std::vector<std::string_view> python_tokens(std::string_view code);

// One kernel of a file for links through kernels (contain.cpp): the low 16 bits of the first
// kSketchSlots slots of its kernel signature (KernelSignature below: identifiers normalised, so
// renames keep it). It estimates the same similarity (standard error 0.04 at 0.9, 0.06 at 0.6)
// at an eighth of the memory and half the hashing (two different shingle sets agree in a slot's
// low 16 bits by chance once in 65,536).
inline constexpr int kSketchSlots = 64;
inline constexpr int kSketchBands = kSketchSlots / kRows;  // its LSH: bands of kRows slots
struct KernelSketch {
  std::array<std::uint16_t, kSketchSlots> minhash{};
  bool helper = false;       // another @jit function of its file calls it
  std::uint32_t name = 0;    // a hash of its name as written (kernel_name_hash)
  std::uint16_t params = 0;  // how many parameters its `def` takes
  std::uint16_t tokens = 0;  // its normalised tokens (at most 65,535): its weight in overlap
};
std::uint32_t kernel_name_hash(std::string_view name);

struct Signature {
  std::array<std::uint32_t, kPermutations> minhash{};
  std::int64_t shingles = 0;  // distinct shingles; 0 for code without tokens
  // Hashes (16 hex digits) of each kernel body of at least kMinBodyTokens tokens, up to renames.
  std::vector<std::string> bodies;
  std::string kernels_sha;  // of the sorted body hashes; of the whole token stream when none
  std::string ops;          // the kernels' operations and data-flow edges, sorted, comma-separated
  // Its kernels of at least kMinKernelTokens normalised tokens, in file order.
  std::vector<KernelSketch> kernels;
  bool kernelless = false;  // no @jit function at all: signed over all its tokens
  // "name/params/tokens" of each of `kernels`, comma-separated, in file order (what is stored;
  // the sketches carry a hash of each name and the counts).
  std::string kernel_names;
  // When it has @jit functions and none of kMinKernelTokens or more (FlagGems' one-line pointwise
  // bodies): a hash of their tokens, identifiers and literals as written (stored as 16 hex
  // digits); else 0.
  std::uint64_t small_kernels = 0;
  // `bodies` as numbers, sorted (what links through kernels read of them).
  std::vector<std::uint64_t> body_ids;
};

// Whether two files' kernels compute different operations on values: each calls or applies one
// the other does not (`log` vs `sqrt`, `tl.maximum` vs `tl.minimum`, `>=` vs `<` on loaded
// values, `and` vs `or`, storing 1 vs 0). An edit that only adds something (a clamp, a scale) is
// not a conflict, and index arithmetic is not compared at all (a revision that rewrites its
// offsets or masks). When every kernel of both files is below kMinKernelTokens (FlagGems'
// one-line pointwise bodies), the kernels are their operations: any difference is a conflict
// (`x + v * (a / b)` vs `x + v * a * b`). The same operations on other operands conflict too:
// each file has a data-flow edge (`>op;from`, an operation applied to what another computed)
// between operations both apply that the other has not, nor explains by an operation of its own
// inserted between them (`y * x * (1 - x)` vs `y * (1 - x * x)`: sigmoid and tanh backward). The
// index of an extremum (`argmin`) conflicts with the extremum (`min`) where the other takes no
// index of it (no `argmin`, no `>==;min`): FlagGems' argmin and min files. False when either has
// no operations.
bool ops_conflict(std::string_view a, std::string_view b);
// In Signature::ops: every kernel of the file is below kMinKernelTokens.
inline constexpr std::string_view kSmallKernels = "#small";

// Whether two files are near duplicates at `threshold`: the same kernels up to renames
// (kernels_sha), or no conflict of operations and either similarity at or above the threshold
// (kKernellessThreshold at least when either file has no kernel) or a link through kernels
// (kernel_link below: one file's kernels within the other's, aligned one to one, named alike, or
// the same small kernels). The rule corpus groups apply to the stored pairs (groups.hpp).
bool near(const Signature& a, const Signature& b, double threshold);

// Links through kernels (contain.cpp), with identifiers normalised (kernel sketches):
//  - within: every kernel of `a` that is not a helper (at least one) is a near-copy of a kernel of
//    `b`, at or above kContainThreshold. A file whose kernels are all in another (an embedded
//    kernel, a backend copy that adds a kernel, an older revision the newer file extends) adds
//    nothing a model could learn from the other, however much host code around them differs;
//  - aligned: both files have the same number, at least kAlignMinKernels, of kernels that are
//    not helpers, and they pair one to one, each with its counterpart at or above
//    kAlignThreshold: a revision or port of a multi-kernel file that edited every kernel (int64
//    indices, block pointers rewritten as pointer arithmetic) keeps its kernels' structure.
//  - named: both files have the same kernels by name (those that are not helpers, at least one),
//    and each is at or above kAlignThreshold with its namesake, taking the same number of
//    parameters, or at or above kNamedThreshold whatever its parameters: a single-kernel revision
//    or backend copy that edits the body (int64 indices, program ids, masks computed another way)
//    and keeps the kernel's name and interface. Variants of one algorithm that keep a kernel's
//    name change its interface (fla's preconditioned KDA adds a `k_precond` to
//    `recompute_w_u_fwd_kernel`, 0.70 similar).
//  - small: both files' @jit functions are all below kMinKernelTokens and the same, identifiers
//    and literals as written (small_kernels), and the files are at least kSmallKernelsThreshold
//    similar: such files are signed over all their tokens, host code included, and a backend
//    copy of a one-line body often rewrites its imports and logger (FlagGems' `isnan`, 0.54).
//    The files' similarity guards against one trivial function shared by different operations
//    (FlagGems' `copy_func`, `return x`, in `cat.py` and `hstack.py`: 0.47).
//  - named within, overlapping: the kernels of one file that are not helpers (at least one) all
//    have namesakes among the other's, and the two files' kernels, helpers included, are
//    kOverlapThreshold similar on average, each kernel with its nearest in the other file,
//    weighted by its tokens, the lower of the two ways. A backend copy or vendored port that
//    edits its kernels, adds or drops one, and keeps their names (aiter's copy of FlagGems'
//    bitonic `topk`: the sort helpers the same, the stage kernels edited, a one-pass kernel added;
//    FlagGems' `cummin` without its loop kernel; Liger's NPU `sparsemax` adding tiled kernels).
//    Siblings of one template take other names (`argmin_kernel` and `min_kernel`,
//    `recompute_w_u_fwd_gdn2_kernel`), and a file that adds most of its code in kernels of its
//    own falls below the bar on its side.
//  - within, small kernels: a file whose @jit functions are all below kMinKernelTokens (no
//    sketch) and that has kernel bodies of kMinBodyTokens or more (`bodies`: identifiers
//    normalised, literals as written) is within another that has every one of those bodies,
//    whatever their sizes: a five-line helper file inside a library, one-line pointwise bodies
//    in a backend copy that adds a kernel (FlagGems' `sigmoid.py` in metax's, files 0.20), fla's
//    `exp` helper as FlagGems' `exp_func` (0.04). Trivial bodies (`return x`, below
//    kMinBodyTokens) link nothing.
//  - nearly all: a file of small kernels with kNearlyAllKernels or more kernel bodies is within
//    another that has all of them but one (aiter's `chunk_delta_attn_utils.py` holds four of
//    fla's `op.py` one-line helpers and a softplus of its own). Kernels with sketches need all
//    of theirs within: one missing merged Triton-distributed's MoE all-reduce and
//    reduce-scatter files, whose one different kernel (the gather) is what tells them apart.
// None looks at operations; near() and corpus groups do (a conflict vetoes any link but one of
// kernel bodies, `a_bodies_in_b`: the same code computes the same operations).
inline constexpr double kContainThreshold = 0.9;
inline constexpr double kAlignThreshold = 0.6;
inline constexpr int kAlignMinKernels = 2;
inline constexpr int kNearlyAllKernels = 3;
inline constexpr double kNamedThreshold = 0.8;
inline constexpr double kOverlapThreshold = 0.55;
inline constexpr double kSmallKernelsThreshold = 0.5;
// Files without any kernel are compared over all their tokens (host code, code generators that
// write kernels as strings, kernels in another language); two generators for different
// operations share most of theirs, so such a pair needs this much (or the threshold if higher).
inline constexpr double kKernellessThreshold = 0.8;

// `same`: the same kernel sketches, all of them (the same kernels up to renames and literals,
// kernels below kMinKernelTokens aside); corpus groups make such files one class.
enum class KernelLink {
  none = 0,
  a_within_b = 1,
  b_within_a = 2,
  both = 3,
  aligned = 4,
  same = 5,
  named = 6,
  small = 7,
  a_bodies_in_b = 8,  // within, through its small kernels' bodies (no conflict of operations)
  b_bodies_in_a = 9,
  named_within = 10  // kernel names of one within the other's, kernels overlapping
};
KernelLink kernel_link(const Signature& a, const Signature& b);
bool kernels_within(const Signature& a, const Signature& b);  // sketches, or small kernels' bodies
// Signature::bodies (stored as a JSON list of 16-hex-digit strings) -> body_ids.
void body_ids_from_bodies(Signature& s);
bool kernels_aligned(const Signature& a, const Signature& b);
bool kernels_named(const Signature& a, const Signature& b);
bool kernels_named_within(const Signature& a, const Signature& b);
// The same sketches in the same order, at least one of a kernel that is not a helper.
bool same_kernel_sketches(const Signature& a, const Signature& b);
double sketch_similarity(const KernelSketch& a, const KernelSketch& b);
// Signature::kernels <-> the BLOB stored in dedup_signatures.kernels (per kernel: one byte, 1 for
// a helper, then kSketchSlots little-endian uint16s).
std::string kernels_blob(const Signature& s);
bool kernels_from_blob(std::string_view blob, Signature& s);
// Signature::kernel_names (stored in dedup_signatures.kernel_names) -> the name hash, parameter
// count and tokens of each of Signature::kernels (read after kernels_from_blob; false when the
// numbers of kernels differ or the text is malformed).
bool kernel_names_from_text(std::string_view text, Signature& s);

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
  std::string name;     // as written after `def`
  int tokens = 0;       // normalised tokens, from `def` to the body's end
  std::string body;     // hash of those tokens (16 hex digits): the same kernel up to renames
  Signature sig;        // minhash and shingles of those tokens (bodies and kernels_sha unused)
  std::string ops;      // its operations (as Signature::ops, for this kernel alone)
  bool helper = false;  // another @jit function of its file calls it
  int lines = 0;        // its code lines (logical lines, `def` included; no comments, docstrings)
  int params = 0;       // how many parameters its `def` takes
  // Hash of its tokens as `body`, with casts (`.to(...)`) left out and a math function read the
  // same whatever it is called through (`tl.exp`, `tl.math.exp`, `libdevice.exp`, an imported
  // `exp`): what a small kernel must share with an eval kernel to match it (kSmallKernelLines).
  std::string cast_free;
};

// A kernel of this many code lines or fewer (KernelSignature::lines) is too small to identify an
// eval kernel by similarity: a six-line fp16-to-fp8 copy is 0.87 similar to an `add` and 0.92 to
// a fill, identifiers normalised. Such a kernel, on either side, matches only the same kernel up
// to renames, formatting, literals and casts (cast_free).
inline constexpr int kSmallKernelLines = 10;

// How near a sample's kernel is to an eval kernel, for decontamination: 1 for the same kernel up
// to renames, else their similarity, but 0 when the sample's kernel is a helper of its file (a
// tile swizzle shared by GEMMs says nothing of contamination). Operations are not compared here:
// an eval kernel's edited copy often adds a mask one way and a clamp the other. When either kernel
// has kSmallKernelLines code lines or fewer: 1 for the same kernel up to casts too, else 0.
double kernel_match(const KernelSignature& sample, const KernelSignature& eval);

// Whether a sample's kernel is an edited copy of an eval kernel below the similarity threshold:
// the same name and number of parameters, at least kAlignThreshold similar, more than
// kSmallKernelLines code lines each, the sample's kernel not a helper, and no conflict of
// operations between the two kernels (ops_conflict). The kernels-named-alike link of corpus
// groups, kernel by kernel: FlagGems' `bmm_kernel` as TritonBench-G edited it (0.76). Template
// siblings that keep a name change its interface (the tutorial GEMM's `matmul_kernel` against
// TritonBench-G's with an ACTIVATION parameter, 0.73) or their operations (argmin, argmax).
bool kernel_named_match(const KernelSignature& sample, const KernelSignature& eval);

// Kernels below this many normalised tokens (a five-line helper such as a prev_multiple_of has
// about 25) are left out by default: sharing one says nothing about contamination.
inline constexpr int kMinKernelTokens = 60;

// The kernels of `code` with at least min_tokens normalised tokens, in file order.
std::vector<KernelSignature> kernel_signatures(std::string_view code,
                                               int min_tokens = kMinKernelTokens);

// A @jit function below the kernel floor (a one-line pointwise body, a helper), for
// decontamination's exact rule on them (evalset.hpp).
struct SmallFunction {
  std::string name;     // as written after `def`
  std::string written;  // hash of its tokens as written (formatting neutral, literals kept)
  int tokens = 0;       // how many
  bool helper = false;  // another @jit function of its file calls it
  bool called = false;  // a kernel of its file (kMinKernelTokens or more) calls it
};
std::vector<SmallFunction> small_functions(std::string_view code,
                                           int min_tokens = kMinKernelTokens);
// Both from one reading of `code` (what decontamination does for each sample): kernel_signatures
// into `kernels`, small_functions into `small` when given. Without `with_ops` each kernel's `ops`
// stays empty (the data-flow pass is most of the cost; kernel_named_match needs them).
void read_kernels(std::string_view code, int min_tokens, bool with_ops,
                  std::vector<KernelSignature>& kernels, std::vector<SmallFunction>* small);

// The estimated Jaccard similarity of the two shingle sets, in [0, 1]; 0 when either is empty.
double similarity(const Signature& a, const Signature& b);

// The hash of LSH band `band` (0 <= band < kBands) of a signature.
std::uint64_t band_hash(const Signature& s, int band);

// Signature <-> the BLOB stored in dedup_signatures.minhash (little-endian uint32s).
std::string minhash_blob(const Signature& s);
bool minhash_from_blob(std::string_view blob, Signature& s);

}  // namespace kforge::dedup
