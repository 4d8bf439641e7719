// Random operands, and equality to the bit, for tests that hold a fast path to the bits of
// its reference.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"

namespace vg::testing {

// n standard normal floats from rng.
inline std::vector<float> random_floats(int64_t n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = float(rng.normal());
  return v;
}

// The same floats to the bit (so -0 differs from 0, and a NaN equals the same NaN).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// The same shape, dtype and bytes; two undefined tensors are the same.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         (a.numel() == 0 ||
          std::memcmp(a.raw_data(), b.raw_data(), a.numel() * dtype_size(a.dtype())) == 0);
}

}  // namespace vg::testing
