// A double sum over a row that the compiler can vectorise and whose bits depend on the row
// length only. A plain `s += term(c)` loop is a chain of dependent additions that GCC may not
// reorder without -ffast-math, so it runs one scalar add per element; here element c goes to
// lane c % kSumLanes, the lanes (one AVX-512 or two AVX2 registers of doubles) add
// independently, and they are combined in one fixed tree at the end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace vg::vec {

constexpr int kSumLanes = 8;

// sum over c in [0, n) of term(c), in double.
template <class F>
double row_sum(int64_t n, F term) {
  double acc[kSumLanes] = {};
  int64_t c = 0;
  for (; c + kSumLanes <= n; c += kSumLanes) {
    for (int l = 0; l < kSumLanes; ++l) acc[l] += double(term(c + l));
  }
  for (int l = 0; c + l < n; ++l) acc[l] += double(term(c + l));
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// max over c in [0, n) of x[c], n >= 1, in the same lanes: eight independent chains instead
// of one, combined in lane order. Each lane keeps std::max(lane, x[c]) (the lane on a tie or
// an unordered compare), so the result is the same however the lanes are computed. The lanes
// are one vector of GCC's vector extension: as an array of eight, GCC kept them eight scalar
// chains (on AVX2, a softmax row of 50 took 176 instructions to find its max, now 91).
template <class T>
T row_max(const T* x, int64_t n) {
  typedef T Lanes __attribute__((vector_size(kSumLanes * sizeof(T))));
  Lanes lanes;
  for (int l = 0; l < kSumLanes; ++l) lanes[l] = x[0];
  int64_t c = 0;
  for (; c + kSumLanes <= n; c += kSumLanes) {
    Lanes block;
    std::memcpy(&block, x + c, sizeof block);
    lanes = lanes < block ? block : lanes;
  }
  auto lane = [&](int l) { return c + l < n ? std::max(lanes[l], x[c + l]) : lanes[l]; };
  T m = lane(0);
  for (int l = 1; l < kSumLanes; ++l) m = std::max(m, lane(l));
  return m;
}

// Rows per thread chunk for row-wise kernels: about 16k elements, so small inputs stay on
// one thread.
inline int64_t row_grain(int64_t C) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1));
}

}  // namespace vg::vec
