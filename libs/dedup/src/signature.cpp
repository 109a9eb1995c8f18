#include "kforge/dedup/signature.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <tuple>
#include <unordered_map>

#include "kforge/core/sha256.hpp"
#include "tokens.hpp"

namespace kforge::dedup {
namespace {

bool ident_start(unsigned char c) {
  return std::isalpha(c) != 0 || c == '_' || c >= 0x80;
}
bool ident_char(unsigned char c) {
  return std::isalnum(c) != 0 || c == '_' || c >= 0x80;
}

}  // namespace

// Python tokens without comments and whitespace. Literals become "S" / "N" unless keep_literals.
// Malformed input (an unterminated string) never fails: the rest of the file is one string.
void detail::tokenize(std::string_view code, bool keep_literals,
                      std::vector<std::string_view>& out) {
  static constexpr std::string_view kS = "S", kN = "N";
  const std::size_t n = code.size();
  std::size_t i = 0;
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(code[i]);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\\') {
      ++i;
      continue;
    }
    if (c == '#') {
      while (i < n && code[i] != '\n') ++i;
      continue;
    }
    // A string, possibly with a prefix (r, b, f, u and their pairs).
    std::size_t q = i;
    while (q < n && q - i < 2 && code[q] != '\0' && std::strchr("rRbBuUfF", code[q]) != nullptr)
      ++q;
    if (q < n && (code[q] == '"' || code[q] == '\'')) {
      {
        char quote = code[q];
        bool triple = q + 2 < n && code[q + 1] == quote && code[q + 2] == quote;
        std::size_t j = q + (triple ? 3 : 1);
        while (j < n) {
          if (code[j] == '\\') {  // a raw string cannot end on an escaped quote either
            j += 2;
            continue;
          }
          if (!triple && code[j] == '\n') break;  // unterminated: stop at the line end
          if (code[j] == quote) {
            if (!triple) {
              ++j;
              break;
            }
            if (j + 2 < n && code[j + 1] == quote && code[j + 2] == quote) {
              j += 3;
              break;
            }
          }
          ++j;
        }
        j = std::min(j, n);
        out.push_back(keep_literals ? code.substr(i, j - i) : kS);
        i = j;
        continue;
      }
    }
    if (ident_start(c)) {
      std::size_t j = i + 1;
      while (j < n && ident_char(static_cast<unsigned char>(code[j]))) ++j;
      out.push_back(code.substr(i, j - i));
      i = j;
      continue;
    }
    if (std::isdigit(c) != 0 ||
        (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(code[i + 1])) != 0)) {
      std::size_t j = i + 1;
      while (j < n) {
        unsigned char d = static_cast<unsigned char>(code[j]);
        if (std::isalnum(d) != 0 || d == '_' || d == '.') {
          ++j;
        } else if ((d == '+' || d == '-') && (code[j - 1] == 'e' || code[j - 1] == 'E') &&
                   !(j >= 2 && (code[i + 1] == 'x' || code[i + 1] == 'X'))) {
          ++j;
        } else {
          break;
        }
      }
      out.push_back(keep_literals ? code.substr(i, j - i) : kN);
      i = j;
      continue;
    }
    // Operators: the common two- and three-character ones as one token, the rest one each.
    static constexpr std::string_view kOps[] = {
        "**=", "//=", ">>=", "<<=", "...", "**", "//", "==", "!=", "<=", ">=", "->",
        "+=",  "-=",  "*=",  "/=",  "%=",  "&=", "|=", "^=", ">>", "<<", ":="};
    std::size_t len = 1;
    // Every longer operator's second character is one of these: most tokens need no comparison.
    bool longer = i + 1 < n && code[i + 1] != '\0' && std::strchr("=*/<>.", code[i + 1]) != nullptr;
    for (std::size_t k = 0; longer && k < std::size(kOps); ++k)
      if (code.substr(i, kOps[k].size()) == kOps[k]) {
        len = kOps[k].size();
        break;
      }
    out.push_back(code.substr(i, len));
    i += len;
  }
}

namespace {

bool python_keyword(std::string_view t) {
  static constexpr std::string_view kKeywords[] = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  for (auto k : kKeywords)
    if (t == k) return true;
  return false;
}

}  // namespace

void detail::formatting_neutral(std::vector<std::string_view>& toks) {
  static constexpr std::string_view kElif = "elif";
  std::vector<std::string_view> in;
  in.reserve(toks.size());
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (toks[i] == "else" && i + 2 < toks.size() && toks[i + 1] == ":" && toks[i + 2] == "if") {
      in.push_back(kElif);
      i += 2;
      continue;
    }
    in.push_back(toks[i]);
  }
  std::vector<bool> drop(in.size(), false);
  std::vector<std::pair<std::size_t, bool>> open;  // an opening bracket, and whether it groups
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::string_view t = in[i];
    if (t.size() != 1) continue;
    char c = t[0];
    if (c == '(' || c == '[' || c == '{') {
      bool grouping = false;
      if (c == '(') {
        std::string_view p = i > 0 ? in[i - 1] : std::string_view();
        bool callee =
            !p.empty() && (p == ")" || p == "]" ||
                           (ident_start(static_cast<unsigned char>(p[0])) && !python_keyword(p)));
        grouping = !callee;
      }
      open.emplace_back(i, grouping);
    } else if ((c == ')' || c == ']' || c == '}') && !open.empty()) {
      auto [at, grouping] = open.back();
      open.pop_back();
      if (grouping) drop[at] = drop[i] = true;
      if (i > 0 && in[i - 1] == ",") drop[i - 1] = true;
    }
  }
  toks.clear();
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) toks.push_back(in[i]);
}

namespace {

using detail::tokenize;

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// The permutations: h_i(x) = high 32 bits of (a_i * x + b_i), a_i odd; fixed seeds, so
// signatures stored by one build compare with those of another.
struct Perms {
  std::array<std::uint64_t, kPermutations> a{}, b{};
  Perms() {
    std::uint64_t s = 0x6b666f7267652d31ull;  // "kforge-1"
    for (int i = 0; i < kPermutations; ++i) {
      a[static_cast<std::size_t>(i)] = mix64(s += 0x9e3779b97f4a7c15ull) | 1u;
      b[static_cast<std::size_t>(i)] = mix64(s += 0x9e3779b97f4a7c15ull);
    }
  }
};
const Perms& perms() {
  static const Perms p;
  return p;
}

std::string_view strip_left(std::string_view s) {
  std::size_t b = s.find_first_not_of(" \t");
  return b == std::string_view::npos ? std::string_view() : s.substr(b);
}

std::size_t indent_of(std::string_view line) {
  std::size_t k = 0;
  while (k < line.size() && (line[k] == ' ' || line[k] == '\t')) ++k;
  return k;
}

// Whether a decorator line ("@triton.jit", "@jit(...)", "@triton.jit(do_not_specialize=...)")
// makes a Triton kernel: also Gluon's (`@gluon.jit`) and Triton-distributed's
// (`@triton_dist.jit`), Triton kernels with more language features.
bool jit_decorator(std::string_view line) {
  std::string_view s = strip_left(line);
  if (s.empty() || s[0] != '@') return false;
  s.remove_prefix(1);
  std::size_t end = 0;
  while (end < s.size() && (ident_char(static_cast<unsigned char>(s[end])) || s[end] == '.')) ++end;
  std::string_view name = s.substr(0, end);
  return name == "jit" || name == "triton.jit" || name == "tl.jit" || name == "gluon.jit" ||
         name == "triton_dist.jit";
}

// The source of each @jit-decorated function, from `def` to its last indented line.
std::vector<std::string_view> kernel_sources(std::string_view code) {
  std::vector<std::string_view> lines;
  std::vector<std::size_t> offsets;
  for (std::size_t at = 0; at <= code.size();) {
    std::size_t nl = code.find('\n', at);
    if (nl == std::string_view::npos) nl = code.size();
    // Without the '\r' of a CRLF line end, or a blank line would end a kernel.
    std::size_t len = nl - at;
    if (len > 0 && code[at + len - 1] == '\r') --len;
    lines.push_back(code.substr(at, len));
    offsets.push_back(at);
    at = nl + 1;
  }
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!jit_decorator(lines[i])) continue;
    std::size_t d = i + 1;
    while (d < lines.size() && strip_left(lines[d]).starts_with("@")) ++d;
    // Multi-line decorator arguments: find the def within a few lines.
    while (d < lines.size() && d < i + 40 && !strip_left(lines[d]).starts_with("def ") &&
           !strip_left(lines[d]).starts_with("async def "))
      ++d;
    if (d >= lines.size() || d >= i + 40) continue;
    std::size_t def_indent = indent_of(lines[d]);
    // The signature ends at the ':' after its parentheses close.
    std::size_t p = d, depth = 0;
    bool done = false;
    for (; p < lines.size() && !done; ++p)
      for (char ch : lines[p]) {
        if (ch == '#') break;
        if (ch == '(' || ch == '[' || ch == '{') ++depth;
        if ((ch == ')' || ch == ']' || ch == '}') && depth > 0) --depth;
        if (ch == ':' && depth == 0) {
          done = true;
          break;
        }
      }
    std::size_t last = p - 1;
    for (std::size_t k = p; k < lines.size(); ++k) {
      std::string_view s = strip_left(lines[k]);
      if (s.empty() || s.starts_with("#")) continue;
      if (indent_of(lines[k]) <= def_indent) break;
      last = k;
    }
    std::size_t begin = offsets[d];
    std::size_t end = offsets[last] + lines[last].size();
    out.push_back(code.substr(begin, end - begin));
    i = last;
  }
  return out;
}

}  // namespace

std::vector<std::string_view> normalised_tokens(std::string_view code) {
  std::vector<std::string_view> out;
  tokenize(code, false, out);
  detail::formatting_neutral(out);
  return out;
}

std::vector<std::string_view> python_tokens(std::string_view code) {
  std::vector<std::string_view> out;
  tokenize(code, false, out);
  return out;
}

namespace {

// Appends the hashes of the kShingle-token shingles of `toks` (one shingle of all of them when
// fewer).
void add_shingles(const std::vector<std::string_view>& toks, std::vector<std::uint64_t>& shingles) {
  if (toks.empty()) return;
  std::vector<std::uint64_t> th(toks.size());
  for (std::size_t i = 0; i < toks.size(); ++i) th[i] = fnv1a(toks[i]);
  std::size_t k = std::min<std::size_t>(kShingle, toks.size());
  for (std::size_t i = 0; i + k <= toks.size(); ++i) {
    std::uint64_t h = 0x243f6a8885a308d3ull;
    for (std::size_t j = 0; j < k; ++j) h = mix64(h ^ th[i + j]);
    shingles.push_back(h);
  }
}

// The minimum hashes of a set of shingles (sorted and deduplicated here) into sig, in its first
// `slots` slots (the rest left at the maximum).
void fill_minhash(std::vector<std::uint64_t> shingles, Signature& sig,
                  std::size_t slots = kPermutations) {
  std::sort(shingles.begin(), shingles.end());
  shingles.erase(std::unique(shingles.begin(), shingles.end()), shingles.end());
  sig.shingles = static_cast<std::int64_t>(shingles.size());
  sig.minhash.fill(0xffffffffu);
  const Perms& P = perms();
  for (std::uint64_t s : shingles)
    for (std::size_t i = 0; i < slots; ++i) {
      auto v = static_cast<std::uint32_t>((P.a[i] * s + P.b[i]) >> 32);
      if (v < sig.minhash[i]) sig.minhash[i] = v;
    }
}

void fill_minhash(const std::vector<std::string_view>& toks, Signature& sig,
                  std::size_t slots = kPermutations) {
  std::vector<std::uint64_t> shingles;
  add_shingles(toks, shingles);
  fill_minhash(std::move(shingles), sig, slots);
}

bool kept_name(std::string_view t) {
  if (t.size() < 2 || t.size() > 10) return false;  // the names below are 2 to 10 long
  static constexpr std::string_view kKept[] = {
      "False",   "None",     "True",       "and",      "as",     "assert", "async",  "await",
      "break",   "class",    "continue",   "def",      "del",    "elif",   "else",   "except",
      "finally", "for",      "from",       "global",   "if",     "import", "in",     "is",
      "lambda",  "nonlocal", "not",        "or",       "pass",   "raise",  "return", "try",
      "while",   "with",     "yield",      "range",    "min",    "max",    "abs",    "len",
      "int",     "float",    "bool",       "tl",       "triton", "torch",  "math",   "libdevice",
      "print",   "tuple",    "isinstance", "constexpr"};
  for (auto k : kKept)
    if (t == k) return true;
  return false;
}

// Writes every identifier of `toks` (tokens of `src`) that names something of the kernel's own
// as `V`: not a keyword, a kept builtin or module, an attribute name, nor a normalised literal.
void normalise_identifiers(std::string_view src, std::vector<std::string_view>& toks) {
  static constexpr std::string_view kV = "V";
  std::less<const char*> lt;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(toks[i][0]);
    // Normalised literals ("S", "N") point outside the source; a name called N does not.
    bool literal = lt(toks[i].data(), src.data()) || !lt(toks[i].data(), src.data() + src.size());
    bool attribute = i > 0 && toks[i - 1] == ".";
    if (ident_start(c) && !literal && !attribute && !kept_name(toks[i])) toks[i] = kV;
  }
}

}  // namespace

namespace {

// `>op;from` -> (op, from).
std::pair<std::string_view, std::string_view> edge_ends(std::string_view e) {
  std::size_t at = e.find(';');
  if (at == std::string_view::npos) return {e.substr(1), {}};
  return {e.substr(1, at - 1), e.substr(at + 1)};
}

// Whether an edge of `ex` (the data-flow edges of a file whose operations are `ox`, sorted) joins
// two operations both files apply and is not one of `ey`'s, nor one with an operation of y's own
// inserted (`log(x)` against `log(maximum(x, eps))`: a clamp is an edit).
bool rewired(const std::vector<std::string_view>& ex, const std::vector<std::string_view>& ox,
             const std::vector<std::string_view>& ey, const std::vector<std::string_view>& oy) {
  auto has = [](const std::vector<std::string_view>& ops, std::string_view o) {
    return std::binary_search(ops.begin(), ops.end(), o);
  };
  auto edge = [&](std::string_view op, std::string_view from) {
    for (auto e : ey)
      if (edge_ends(e) == std::pair{op, from}) return true;
    return false;
  };
  for (auto e : ex) {
    auto [op, from] = edge_ends(e);
    if (!has(ox, op) || !has(oy, op) || (from != "x" && !(has(ox, from) && has(oy, from))))
      continue;
    if (edge(op, from)) continue;
    bool inserted = false;
    for (auto f : ey) {
      auto [o, m] = edge_ends(f);
      inserted = inserted || (o == op && !has(ox, m) && edge(m, from));
    }
    if (!inserted) return true;
  }
  return false;
}

// Whether `x` takes the index of an extremum (`argmin`) where `y` takes the extremum itself
// (`min`) and no index of it: neither `argmin` nor an index found by comparing with the minimum
// (`>==;min`, how aiter's bitonic top-k finds what FlagGems' finds with `argmin`). Sorted ops
// without edges, edges apart.
bool extremum_not_index(const std::vector<std::string_view>& x,
                        const std::vector<std::string_view>& y,
                        const std::vector<std::string_view>& flow_y) {
  auto has = [](const std::vector<std::string_view>& v, std::string_view o) {
    return std::find(v.begin(), v.end(), o) != v.end();
  };
  for (auto [arg, ext, cmp] :
       {std::tuple{"argmin", "min", ">==;min"}, std::tuple{"argmax", "max", ">==;max"}})
    if (has(x, arg) && !has(y, arg) && has(y, ext) && !has(flow_y, cmp)) return true;
  return false;
}

}  // namespace

bool ops_conflict(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return false;
  auto split = [](std::string_view s) {
    std::vector<std::string_view> out;
    for (std::size_t at = 0; at <= s.size();) {
      std::size_t c = s.find(',', at);
      if (c == std::string_view::npos) c = s.size();
      out.push_back(s.substr(at, c - at));
      at = c + 1;
    }
    return out;
  };
  auto x = split(a), y = split(b);  // sorted
  // Data-flow edges (`>op;from`), compared below.
  auto aside = [](std::vector<std::string_view>& v) {
    std::vector<std::string_view> out;
    std::erase_if(v, [&](std::string_view o) {
      bool edge = o.find(';') != std::string_view::npos;
      if (edge) out.push_back(o);
      return edge;
    });
    return out;
  };
  auto flow_x = aside(x), flow_y = aside(y);
  auto small = [](std::vector<std::string_view>& v) {
    auto it = std::find(v.begin(), v.end(), kSmallKernels);
    if (it == v.end()) return false;
    v.erase(it);
    return true;
  };
  // The tensors one kernel reads and writes (`io:R/W`, a file with one kernel that writes):
  // compared only when both files have it, writes always, reads when both read through blocks of
  // pointers (a table of pointers resolves to none).
  auto io = [](std::vector<std::string_view>& v) {
    auto it =
        std::find_if(v.begin(), v.end(), [](std::string_view o) { return o.starts_with("io:"); });
    if (it == v.end()) return std::pair<long, long>{-1, -1};
    std::string_view t = it->substr(3);
    v.erase(it);
    std::size_t slash = t.find('/');
    return std::pair<long, long>{
        std::strtol(std::string(t.substr(0, slash)).c_str(), nullptr, 10),
        std::strtol(std::string(t.substr(slash + 1)).c_str(), nullptr, 10)};
  };
  auto io_x = io(x), io_y = io(y);
  if (io_x.second >= 0 && io_y.second >= 0) {
    if (io_x.second != io_y.second ||
        (io_x.first > 0 && io_y.first > 0 && io_x.first != io_y.first))
      return true;
    // Between single kernels, shifts on values on one side only unpack another format (int4
    // weights two to a byte against int8 ones).
    auto shifts = [](const std::vector<std::string_view>& v) {
      return std::find(v.begin(), v.end(), ">>") != v.end() ||
             std::find(v.begin(), v.end(), "<<") != v.end();
    };
    if (shifts(x) != shifts(y)) return true;
  }
  if (extremum_not_index(x, y, flow_y) || extremum_not_index(y, x, flow_x)) return true;
  bool small_x = small(x), small_y = small(y);
  if (small_x && small_y) return x != y;  // one-line bodies: any other operation
  bool only_x = false, only_y = false;
  std::size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    if (j == y.size() || (i < x.size() && x[i] < y[j])) {
      only_x = true;
      ++i;
    } else if (i == x.size() || y[j] < x[i]) {
      only_y = true;
      ++j;
    } else {
      ++i, ++j;
    }
  }
  if (only_x && only_y) return true;
  return rewired(flow_x, x, flow_y, y) && rewired(flow_y, y, flow_x, x);
}

bool near(const Signature& a, const Signature& b, double threshold) {
  if (a.kernels_sha == b.kernels_sha) return true;
  if (ops_conflict(a.ops, b.ops)) {
    KernelLink link = kernel_link(a, b);
    return link == KernelLink::a_bodies_in_b || link == KernelLink::b_bodies_in_a;
  }
  double need =
      a.kernelless || b.kernelless ? std::max(threshold, kKernellessThreshold) : threshold;
  return similarity(a, b) >= need - 1e-9 || kernel_link(a, b) != KernelLink::none;
}

namespace {

// Which of a file's kernels (their tokens) another kernel of the file calls: helpers. One pass
// over the calls of every kernel (a name followed by `(`, not after `def`).
std::vector<bool> helpers_of(const std::vector<std::vector<std::string_view>>& raw,
                             std::vector<std::string_view>& names) {
  names.assign(raw.size(), {});
  for (std::size_t i = 0; i < raw.size(); ++i)
    if (raw[i].size() > 2) names[i] = raw[i][raw[i][0] == "async" ? 2 : 1];
  // name -> the kernels that call it (the first two are enough: one of them is not itself).
  std::unordered_map<std::string_view, std::pair<int, int>> callers;
  for (std::size_t j = 0; j < raw.size(); ++j)
    for (std::size_t t = 1; t + 1 < raw[j].size(); ++t)
      if (raw[j][t + 1] == "(" && raw[j][t - 1] != "def") {
        auto [it, fresh] = callers.try_emplace(raw[j][t], static_cast<int>(j), -1);
        if (!fresh && it->second.first != static_cast<int>(j) && it->second.second < 0)
          it->second.second = static_cast<int>(j);
      }
  std::vector<bool> out(raw.size(), false);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (names[i].empty()) continue;
    auto it = callers.find(names[i]);
    if (it == callers.end()) continue;
    auto [x, y] = it->second;
    out[i] = x != static_cast<int>(i) || (y >= 0 && y != static_cast<int>(i));
  }
  return out;
}

// How many parameters a kernel's tokens (from `def`) declare: the non-empty top-level segments
// between the parentheses of its signature.
int param_count(const std::vector<std::string_view>& toks) {
  std::size_t i = 0;
  while (i < toks.size() && toks[i] != "(") ++i;
  int depth = 0, n = 0;
  bool content = false;
  for (++i; i < toks.size(); ++i) {
    std::string_view t = toks[i];
    if (t == "(" || t == "[" || t == "{") ++depth;
    if ((t == ")" || t == "]" || t == "}") && depth-- == 0) break;
    if (t == "," && depth == 0) {
      n += content ? 1 : 0;
      content = false;
    } else {
      content = true;
    }
  }
  return n + (content ? 1 : 0);
}

// A math function's name (a `tl`, `tl.math` or libdevice function, or one a kernel library
// defines under the same name, as fla's `exp`).
bool math_function(std::string_view t) {
  static constexpr std::string_view kMath[] = {"exp", "exp2", "log",  "log2", "sqrt", "rsqrt",
                                               "sin", "cos",  "tanh", "erf",  "pow",  "sigmoid"};
  return std::find(std::begin(kMath), std::end(kMath), t) != std::end(kMath);
}

// The hash of a kernel's normalised tokens without its casts (`. to ( ... )`), a math function
// called through a module (`tl . exp (`, `tl . math . exp (`, `libdevice . exp (`) or by a name
// of its own (`V (` where `raw` has `exp`) written as its name.
std::string cast_free_hash(const std::vector<std::string_view>& raw,
                           const std::vector<std::string_view>& norm) {
  std::string joined;
  for (std::size_t i = 0; i < norm.size(); ++i) {
    std::size_t f = i;  // past the modules
    while (f + 2 < norm.size() && norm[f + 1] == "." &&
           (norm[f] == "tl" || norm[f] == "math" || norm[f] == "libdevice"))
      f += 2;
    if (f + 1 < norm.size() && norm[f + 1] == "(" && (f > i || norm[f] == "V") &&
        math_function(raw[f])) {
      joined += raw[f];
      joined += '\x1f';
      i = f;
      continue;
    }
    if (norm[i] == "." && i + 2 < norm.size() && norm[i + 1] == "to" && norm[i + 2] == "(") {
      int depth = 0;
      std::size_t j = i + 2;
      for (; j < norm.size(); ++j) {
        if (norm[j] == "(") ++depth;
        if (norm[j] == ")" && --depth == 0) break;
      }
      i = j;
      continue;
    }
    joined += norm[i];
    joined += '\x1f';
  }
  return sha256_hex(joined).substr(0, 16);
}

}  // namespace

namespace {

// One small function of a file read by read_kernels (its tokens `raw[i]`, formatting neutral).
SmallFunction small_function(std::string_view src, std::size_t i,
                             const std::vector<std::vector<std::string_view>>& raw,
                             std::string_view name, bool helper, int min_tokens) {
  SmallFunction f;
  f.name = std::string(name);
  f.helper = helper;
  auto calls = [&](std::size_t j) {
    for (std::size_t t = 1; t + 1 < raw[j].size(); ++t)
      if (raw[j][t] == name && raw[j][t + 1] == "(" && raw[j][t - 1] != "def") return true;
    return false;
  };
  for (std::size_t j = 0; j < raw.size() && !f.called; ++j)
    f.called = j != i && static_cast<int>(raw[j].size()) >= min_tokens && calls(j);
  std::vector<std::string_view> written;
  tokenize(src, true, written);
  detail::formatting_neutral(written);
  f.tokens = static_cast<int>(written.size());
  std::string joined;
  for (auto t : written) joined.append(t).push_back('\x1f');
  f.written = sha256_hex(joined).substr(0, 16);
  return f;
}

}  // namespace

void read_kernels(std::string_view code, int min_tokens, bool with_ops,
                  std::vector<KernelSignature>& kernels, std::vector<SmallFunction>* small) {
  kernels.clear();
  if (small != nullptr) small->clear();
  std::vector<std::string_view> sources = kernel_sources(code);
  std::vector<std::vector<std::string_view>> raw(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    tokenize(sources[i], false, raw[i]);
    detail::formatting_neutral(raw[i]);
  }
  std::vector<std::string_view> names;
  std::vector<bool> helper = helpers_of(raw, names);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::vector<std::string_view>& toks = raw[i];
    if (static_cast<int>(toks.size()) < std::max(min_tokens, 1)) {
      if (small != nullptr && !names[i].empty())
        small->push_back(small_function(sources[i], i, raw, names[i], helper[i], min_tokens));
      continue;
    }
    KernelSignature k;
    if (toks.size() > 1) k.name = std::string(toks[toks[0] == "async" ? 2 : 1]);
    k.helper = helper[i];
    std::vector<std::string_view> norm = toks;
    normalise_identifiers(sources[i], norm);
    k.tokens = static_cast<int>(norm.size());
    std::string joined;
    for (auto t : norm) {
      joined += t;
      joined += '\x1f';
    }
    k.body = sha256_hex(joined).substr(0, 16);
    k.lines = detail::code_lines(sources[i]);
    k.cast_free = cast_free_hash(toks, norm);
    k.params = param_count(toks);
    if (with_ops) {
      std::vector<std::string> ops;
      detail::value_ops(sources[i], ops);
      std::sort(ops.begin(), ops.end());
      ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
      for (const auto& o : ops) k.ops.append(k.ops.empty() ? "" : ",").append(o);
    }
    fill_minhash(norm, k.sig);
    kernels.push_back(std::move(k));
  }
}

std::vector<KernelSignature> kernel_signatures(std::string_view code, int min_tokens) {
  std::vector<KernelSignature> out;
  read_kernels(code, min_tokens, true, out, nullptr);
  return out;
}

std::vector<SmallFunction> small_functions(std::string_view code, int min_tokens) {
  std::vector<KernelSignature> kernels;
  std::vector<SmallFunction> out;
  read_kernels(code, min_tokens, false, kernels, &out);
  return out;
}

bool kernel_named_match(const KernelSignature& sample, const KernelSignature& eval) {
  if (sample.helper || sample.name != eval.name || sample.params != eval.params) return false;
  if (sample.lines <= kSmallKernelLines || eval.lines <= kSmallKernelLines) return false;
  return similarity(sample.sig, eval.sig) >= kAlignThreshold - 1e-9 &&
         !ops_conflict(sample.ops, eval.ops);
}

double kernel_match(const KernelSignature& sample, const KernelSignature& eval) {
  if (sample.helper) return 0;
  if (sample.body == eval.body) return 1;
  if (sample.lines <= kSmallKernelLines || eval.lines <= kSmallKernelLines)
    return sample.cast_free == eval.cast_free ? 1 : 0;
  return similarity(sample.sig, eval.sig);
}

Signature compute_signature(std::string_view code) {
  Signature sig;
  std::vector<std::string_view> toks, body;
  std::vector<std::uint64_t> kernel_shingles;
  std::vector<std::string> ops;
  std::vector<std::string> small;  // each @jit function's tokens, for small_kernels
  std::vector<std::string_view> sources = kernel_sources(code);
  sig.kernelless = sources.empty();
  std::vector<std::vector<std::string_view>> kernel_toks(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    tokenize(sources[i], false, kernel_toks[i]);
    detail::formatting_neutral(kernel_toks[i]);
  }
  std::vector<std::string_view> names;
  std::vector<bool> helper = helpers_of(kernel_toks, names);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::string_view src = sources[i];
    const std::vector<std::string_view>& kt = kernel_toks[i];
    detail::value_ops(src, ops);
    add_shingles(kt, kernel_shingles);
    // Its sketch (the first kSketchSlots slots of its kernel signature, low 16 bits of each).
    if (static_cast<int>(kt.size()) >= kMinKernelTokens) {
      body = kt;
      normalise_identifiers(src, body);
      Signature ks;
      fill_minhash(body, ks, kSketchSlots);
      KernelSketch sk;
      for (std::size_t p = 0; p < kSketchSlots; ++p)
        sk.minhash[p] = static_cast<std::uint16_t>(ks.minhash[p] & 0xffffu);
      sk.helper = helper[i];
      sk.name = kernel_name_hash(names[i]);
      sk.params = static_cast<std::uint16_t>(std::min(param_count(kt), 0xffff));
      sk.tokens = static_cast<std::uint16_t>(std::min<std::size_t>(kt.size(), 0xffff));
      if (!sig.kernel_names.empty()) sig.kernel_names += ',';
      sig.kernel_names += names[i];
      sig.kernel_names += '/' + std::to_string(sk.params) + '/' + std::to_string(sk.tokens);
      sig.kernels.push_back(sk);
    }
    body.clear();
    tokenize(src, true, body);
    detail::formatting_neutral(body);
    std::string joined;
    if (sig.kernels.empty()) {  // all small so far: keep it as written, for small_kernels
      for (auto t : body) joined.append(t).push_back('\x1f');
      small.push_back(joined);
      joined.clear();
    }
    if (static_cast<int>(body.size()) < kMinBodyTokens) continue;
    normalise_identifiers(src, body);
    for (auto t : body) joined.append(t).push_back('\x1f');
    sig.bodies.push_back(sha256_hex(joined).substr(0, 16));
  }
  if (sig.kernels.empty() && !small.empty()) {
    std::sort(small.begin(), small.end());
    std::string all;
    for (const auto& s : small) all.append(s).push_back('\x1e');
    sig.small_kernels = std::max<std::uint64_t>(
        1, std::strtoull(sha256_hex(all).substr(0, 16).c_str(), nullptr, 16));
  }
  std::sort(kernel_shingles.begin(), kernel_shingles.end());
  kernel_shingles.erase(std::unique(kernel_shingles.begin(), kernel_shingles.end()),
                        kernel_shingles.end());
  if (static_cast<int>(kernel_shingles.size()) >= kMinKernelShingles) {
    fill_minhash(std::move(kernel_shingles), sig);
  } else {
    toks.clear();
    tokenize(code, false, toks);
    detail::formatting_neutral(toks);
    fill_minhash(toks, sig);
  }
  // The tensors a kernel reads and writes (`io:R/W`) are compared between single kernels only: a
  // file's kernels are split, merged and added to across revisions and ports.
  if (std::count_if(ops.begin(), ops.end(),
                    [](const std::string& o) { return o.starts_with("io:"); }) != 1)
    std::erase_if(ops, [](const std::string& o) { return o.starts_with("io:"); });
  // Kernels all below the sketch floor (one-line bodies) are their operations (ops_conflict).
  if (!sig.kernelless && sig.kernels.empty() && !ops.empty()) ops.emplace_back(kSmallKernels);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  for (const auto& o : ops) {
    if (!sig.ops.empty()) sig.ops += ',';
    sig.ops += o;
  }
  std::sort(sig.bodies.begin(), sig.bodies.end());
  sig.bodies.erase(std::unique(sig.bodies.begin(), sig.bodies.end()), sig.bodies.end());
  body_ids_from_bodies(sig);
  std::string all;
  if (!sig.bodies.empty()) {
    for (const auto& b : sig.bodies) all += b + ",";
  } else {
    std::vector<std::string_view> raw;
    tokenize(code, true, raw);
    detail::formatting_neutral(raw);
    for (auto t : raw) {
      all += t;
      all += '\x1f';
    }
  }
  sig.kernels_sha = sha256_hex(all).substr(0, 16);
  return sig;
}

double similarity(const Signature& a, const Signature& b) {
  if (a.shingles == 0 || b.shingles == 0) return 0;
  int same = 0;
  for (std::size_t i = 0; i < kPermutations; ++i) same += a.minhash[i] == b.minhash[i] ? 1 : 0;
  return static_cast<double>(same) / kPermutations;
}

std::uint64_t band_hash(const Signature& s, int band) {
  std::uint64_t h = mix64(static_cast<std::uint64_t>(band) + 1);
  for (int r = 0; r < kRows; ++r)
    h = mix64(h ^ s.minhash[static_cast<std::size_t>(band * kRows + r)]);
  return h;
}

std::string minhash_blob(const Signature& s) {
  std::string out(kPermutations * 4, '\0');
  for (std::size_t i = 0; i < kPermutations; ++i)
    for (int k = 0; k < 4; ++k)
      out[i * 4 + static_cast<std::size_t>(k)] =
          static_cast<char>((s.minhash[i] >> (8 * k)) & 0xff);
  return out;
}

bool minhash_from_blob(std::string_view blob, Signature& s) {
  if (blob.size() != kPermutations * 4) return false;
  for (std::size_t i = 0; i < kPermutations; ++i) {
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k)
      v |= static_cast<std::uint32_t>(
               static_cast<unsigned char>(blob[i * 4 + static_cast<std::size_t>(k)]))
           << (8 * k);
    s.minhash[i] = v;
  }
  return true;
}

}  // namespace kforge::dedup
