// Containment: a file whose kernels are all near-copies of kernels of another (signature.hpp
// kernels_within), from kernel sketches.

#include <algorithm>

#include "kforge/dedup/signature.hpp"

namespace kforge::dedup {

double sketch_similarity(const KernelSketch& a, const KernelSketch& b) {
  int same = 0;
  for (std::size_t i = 0; i < kPermutations; ++i) same += a.minhash[i] == b.minhash[i] ? 1 : 0;
  return static_cast<double>(same) / kPermutations;
}

namespace {

bool near_kernel(const KernelSketch& a, const KernelSketch& b, double t) {
  return sketch_similarity(a, b) >= t - 1e-9;
}

}  // namespace

bool kernels_within(const Signature& a, const Signature& b) {
  bool any = false;
  for (const KernelSketch& k : a.kernels) {
    if (k.helper) continue;
    any = true;
    bool found = std::any_of(b.kernels.begin(), b.kernels.end(), [&](const KernelSketch& o) {
      return near_kernel(k, o, kContainThreshold);
    });
    if (!found) return false;
  }
  return any;
}

bool kernels_aligned(const Signature& a, const Signature& b) {
  // The kernels that are not helpers, each side.
  std::vector<const KernelSketch*> x, y;
  for (const auto& k : a.kernels)
    if (!k.helper) x.push_back(&k);
  for (const auto& k : b.kernels)
    if (!k.helper) y.push_back(&k);
  if (x.size() != y.size() || static_cast<int>(x.size()) < kAlignMinKernels) return false;
  // Each kernel's nearest counterpart (the first in file order on ties) must be at or above the
  // threshold, and no two kernels of a side may take the same counterpart.
  auto nearest = [](const KernelSketch* k, const std::vector<const KernelSketch*>& other) {
    std::size_t best = 0;
    double s = -1;
    for (std::size_t i = 0; i < other.size(); ++i) {
      double v = sketch_similarity(*k, *other[i]);
      if (v > s) s = v, best = i;
    }
    return std::pair{best, s};
  };
  for (const auto* side : {&x, &y}) {
    const auto& other = side == &x ? y : x;
    std::vector<bool> taken(other.size(), false);
    for (const KernelSketch* k : *side) {
      auto [i, s] = nearest(k, other);
      if (s < kAlignThreshold - 1e-9 || taken[i]) return false;
      taken[i] = true;
    }
  }
  return true;
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
  if (same_kernel_sketches(a, b)) return KernelLink::same;
  bool ab = kernels_within(a, b), ba = kernels_within(b, a);
  if (ab && ba) return KernelLink::both;
  if (ab) return KernelLink::a_within_b;
  if (ba) return KernelLink::b_within_a;
  return kernels_aligned(a, b) ? KernelLink::aligned : KernelLink::none;
}

std::string kernels_blob(const Signature& s) {
  std::string out;
  out.reserve(s.kernels.size() * (1 + kPermutations * 2));
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
  constexpr std::size_t kSize = 1 + kPermutations * 2;
  if (blob.size() % kSize != 0) return false;
  s.kernels.assign(blob.size() / kSize, {});
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    std::string_view b = blob.substr(k * kSize, kSize);
    s.kernels[k].helper = b[0] != 0;
    for (std::size_t i = 0; i < kPermutations; ++i)
      s.kernels[k].minhash[i] = static_cast<std::uint16_t>(
          static_cast<unsigned char>(b[1 + 2 * i]) |
          (static_cast<unsigned>(static_cast<unsigned char>(b[2 + 2 * i])) << 8));
  }
  return true;
}

}  // namespace kforge::dedup
