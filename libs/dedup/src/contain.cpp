// Links through kernels (signature.hpp kernel_link: within, aligned, named), from kernel
// sketches.

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "kforge/dedup/signature.hpp"

namespace kforge::dedup {

double sketch_similarity(const KernelSketch& a, const KernelSketch& b) {
  int same = 0;
  for (std::size_t i = 0; i < kSketchSlots; ++i) same += a.minhash[i] == b.minhash[i] ? 1 : 0;
  return static_cast<double>(same) / kSketchSlots;
}

namespace {

// The slots two sketches agree in, for every pair of a's and b's kernels (row-major), computed
// once per pair of files: within both ways and alignment all read it.
struct Agreement {
  std::size_t rows = 0, cols = 0;
  std::vector<int> same;
  Agreement(const Signature& a, const Signature& b)
      : rows(a.kernels.size()), cols(b.kernels.size()), same(rows * cols) {
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) {
        const auto& x = a.kernels[i].minhash;
        const auto& y = b.kernels[j].minhash;
        int n = 0;
        for (std::size_t p = 0; p < kSketchSlots; ++p) n += x[p] == y[p] ? 1 : 0;
        same[i * cols + j] = n;
      }
  }
  int at(std::size_t i, std::size_t j, bool transposed) const {
    return transposed ? same[j * cols + i] : same[i * cols + j];
  }
};

// Slots out of kSketchSlots for a similarity threshold.
int slots(double t) {
  int n = 0;
  while (static_cast<double>(n) / kSketchSlots < t - 1e-9) ++n;
  return n;
}

// Whether every non-helper kernel of `x` (at least one) has a kernel of `y` within. (All but one
// of them merged Triton-distributed's MoE reduce-scatter file with the all-reduce one, whose
// gather kernel is what tells them apart: nearly all is for kernel bodies, bodies_within.)
bool within(const Signature& x, const Signature& y, const Agreement& m, bool transposed) {
  const int need = slots(kContainThreshold);
  bool any = false;
  for (std::size_t i = 0; i < x.kernels.size(); ++i) {
    if (x.kernels[i].helper) continue;
    any = true;
    bool found = false;
    for (std::size_t j = 0; j < y.kernels.size() && !found; ++j)
      found = m.at(i, j, transposed) >= need;
    if (!found) return false;
  }
  return any;
}

bool aligned(const Signature& a, const Signature& b, const Agreement& m) {
  // The kernels that are not helpers, each side.
  std::vector<std::size_t> x, y;
  for (std::size_t i = 0; i < a.kernels.size(); ++i)
    if (!a.kernels[i].helper) x.push_back(i);
  for (std::size_t j = 0; j < b.kernels.size(); ++j)
    if (!b.kernels[j].helper) y.push_back(j);
  if (x.size() != y.size() || static_cast<int>(x.size()) < kAlignMinKernels) return false;
  // Each kernel's nearest counterpart (the first in file order on ties) must be at or above the
  // threshold, and no two kernels of a side may take the same counterpart.
  const int need = slots(kAlignThreshold);
  for (bool transposed : {false, true}) {
    const auto& side = transposed ? y : x;
    const auto& other = transposed ? x : y;
    std::vector<bool> taken(other.size(), false);
    for (std::size_t k : side) {
      std::size_t best = 0;
      int s = -1;
      for (std::size_t o = 0; o < other.size(); ++o) {
        int v = transposed ? m.at(other[o], k, false) : m.at(k, other[o], false);
        if (v > s) s = v, best = o;
      }
      if (s < need || taken[best]) return false;
      taken[best] = true;
    }
  }
  return true;
}

// Whether the kernels of `a` and `b` that are not helpers (at least one) have the same names, and
// each is near its namesake: at or above kAlignThreshold with as many parameters, or at or above
// kNamedThreshold.
bool named(const Signature& a, const Signature& b, const Agreement& m) {
  std::vector<std::size_t> x, y;
  for (std::size_t i = 0; i < a.kernels.size(); ++i)
    if (!a.kernels[i].helper) x.push_back(i);
  for (std::size_t j = 0; j < b.kernels.size(); ++j)
    if (!b.kernels[j].helper) y.push_back(j);
  if (x.empty() || x.size() != y.size()) return false;
  const int need = slots(kAlignThreshold), need_named = slots(kNamedThreshold);
  std::vector<bool> taken(y.size(), false);
  for (std::size_t i : x) {
    const KernelSketch& k = a.kernels[i];
    if (k.name == 0) return false;
    // Its namesake (the first not yet taken, in file order).
    std::size_t o = 0;
    while (o < y.size() && (taken[o] || b.kernels[y[o]].name != k.name)) ++o;
    if (o == y.size()) return false;
    taken[o] = true;
    int same = m.at(i, y[o], false);
    if (same < need_named && (same < need || b.kernels[y[o]].params != k.params)) return false;
  }
  return true;
}

// The name hashes of `s`'s kernels that are not helpers, sorted; empty when one has no name.
std::vector<std::uint32_t> own_names(const Signature& s) {
  std::vector<std::uint32_t> out;
  for (const KernelSketch& k : s.kernels) {
    if (k.helper) continue;
    if (k.name == 0) return {};
    out.push_back(k.name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// How much of `x`'s kernel code (its tokens, helpers included) has a near kernel in `y`: each
// kernel's similarity with its nearest kernel of `y`, weighted by its tokens.
double overlap(const Signature& x, const Signature& y, const Agreement& m, bool transposed) {
  double sum = 0, weight = 0;
  for (std::size_t i = 0; i < x.kernels.size(); ++i) {
    int best = 0;
    for (std::size_t j = 0; j < y.kernels.size(); ++j)
      best = std::max(best, m.at(i, j, transposed));
    double w = std::max<double>(1, x.kernels[i].tokens);
    sum += w * best / kSketchSlots;
    weight += w;
  }
  return weight > 0 ? sum / weight : 0;
}

// Whether the non-helper kernels of one file (at least one) all have namesakes among the other's,
// and each file's kernel code overlaps the other's at kOverlapThreshold or more.
bool named_within(const Signature& a, const Signature& b, const Agreement& m) {
  std::vector<std::uint32_t> x = own_names(a), y = own_names(b);
  if (x.empty() || y.empty()) return false;
  if (!std::includes(x.begin(), x.end(), y.begin(), y.end()) &&
      !std::includes(y.begin(), y.end(), x.begin(), x.end()))
    return false;
  return std::min(overlap(a, b, m, false), overlap(b, a, m, true)) >= kOverlapThreshold - 1e-9;
}

// Whether `x` has no kernel sketch, at least one kernel body, and every body is one of `y`'s (all
// but one of kNearlyAllKernels or more).
bool bodies_within(const Signature& x, const Signature& y) {
  if (!x.kernels.empty() || x.kernelless || x.body_ids.empty()) return false;
  std::size_t missed = 0;
  for (std::uint64_t b : x.body_ids)
    if (!std::binary_search(y.body_ids.begin(), y.body_ids.end(), b) && ++missed > 1) return false;
  return missed == 0 || static_cast<int>(x.body_ids.size()) >= kNearlyAllKernels;
}

}  // namespace

void body_ids_from_bodies(Signature& s) {
  s.body_ids.clear();
  for (const auto& b : s.bodies) s.body_ids.push_back(std::strtoull(b.c_str(), nullptr, 16));
  std::sort(s.body_ids.begin(), s.body_ids.end());
  s.body_ids.erase(std::unique(s.body_ids.begin(), s.body_ids.end()), s.body_ids.end());
}

std::uint32_t kernel_name_hash(std::string_view name) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return h == 0 ? 1 : h;  // 0: no name
}

bool kernel_names_from_text(std::string_view text, Signature& s) {
  std::size_t k = 0;
  for (std::size_t at = 0; at < text.size(); ++k) {
    std::size_t end = text.find(',', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(at, end - at);
    // name/params/tokens
    std::size_t slash = item.find('/');
    unsigned params = 0, tokens = 0;
    if (k >= s.kernels.size() || slash == std::string_view::npos || slash == 0) return false;
    const char* end_item = item.data() + item.size();
    auto [p, ec] = std::from_chars(item.data() + slash + 1, end_item, params);
    if (ec != std::errc() || p == end_item || *p != '/' || params > 0xffff) return false;
    auto [q, ec2] = std::from_chars(p + 1, end_item, tokens);
    if (ec2 != std::errc() || q != end_item || tokens > 0xffff) return false;
    s.kernels[k].name = kernel_name_hash(item.substr(0, slash));
    s.kernels[k].params = static_cast<std::uint16_t>(params);
    s.kernels[k].tokens = static_cast<std::uint16_t>(tokens);
    at = end + 1;
  }
  return k == s.kernels.size();
}

bool kernels_within(const Signature& a, const Signature& b) {
  return bodies_within(a, b) || within(a, b, Agreement(a, b), false);
}

bool kernels_aligned(const Signature& a, const Signature& b) {
  return aligned(a, b, Agreement(a, b));
}

bool kernels_named(const Signature& a, const Signature& b) {
  return named(a, b, Agreement(a, b));
}

bool kernels_named_within(const Signature& a, const Signature& b) {
  return named_within(a, b, Agreement(a, b));
}

bool same_kernel_sketches(const Signature& a, const Signature& b) {
  if (a.kernels.size() != b.kernels.size()) return false;
  bool kernel = false;
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    if (a.kernels[i].helper != b.kernels[i].helper || a.kernels[i].minhash != b.kernels[i].minhash)
      return false;
    kernel = kernel || !a.kernels[i].helper;
  }
  return kernel;
}

KernelLink kernel_link(const Signature& a, const Signature& b) {
  if (a.small_kernels != 0 && a.small_kernels == b.small_kernels &&
      similarity(a, b) >= kSmallKernelsThreshold - 1e-9)
    return KernelLink::small;
  if (same_kernel_sketches(a, b)) return KernelLink::same;
  bool small_ab = bodies_within(a, b), small_ba = bodies_within(b, a);
  if (small_ab && small_ba) return KernelLink::both;
  if (small_ab) return KernelLink::a_bodies_in_b;
  if (small_ba) return KernelLink::b_bodies_in_a;
  if (a.kernels.empty() || b.kernels.empty()) return KernelLink::none;
  Agreement m(a, b);
  bool ab = within(a, b, m, false), ba = within(b, a, m, true);
  if (ab && ba) return KernelLink::both;
  if (ab) return KernelLink::a_within_b;
  if (ba) return KernelLink::b_within_a;
  if (aligned(a, b, m)) return KernelLink::aligned;
  if (named(a, b, m)) return KernelLink::named;
  return named_within(a, b, m) ? KernelLink::named_within : KernelLink::none;
}

std::string kernels_blob(const Signature& s) {
  std::string out;
  out.reserve(s.kernels.size() * (1 + kSketchSlots * 2));
  for (const KernelSketch& k : s.kernels) {
    out += static_cast<char>(k.helper ? 1 : 0);
    for (std::uint16_t v : k.minhash) {
      out += static_cast<char>(v & 0xff);
      out += static_cast<char>(v >> 8);
    }
  }
  return out;
}

bool kernels_from_blob(std::string_view blob, Signature& s) {
  constexpr std::size_t kSize = 1 + kSketchSlots * 2;
  if (blob.size() % kSize != 0) return false;
  s.kernels.assign(blob.size() / kSize, {});
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    std::string_view b = blob.substr(k * kSize, kSize);
    s.kernels[k].helper = b[0] != 0;
    for (std::size_t i = 0; i < kSketchSlots; ++i)
      s.kernels[k].minhash[i] = static_cast<std::uint16_t>(
          static_cast<unsigned char>(b[1 + 2 * i]) |
          (static_cast<unsigned>(static_cast<unsigned char>(b[2 + 2 * i])) << 8));
  }
  return true;
}

}  // namespace kforge::dedup
