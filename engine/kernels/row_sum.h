// A double sum over a row that the compiler can vectorise and whose bits depend on the row
// length only. A plain `s += term(c)` loop is a chain of dependent additions that GCC may not
// reorder without -ffast-math, so it runs one scalar add per element; here element c goes to
// lane c % kSumLanes, the lanes (one AVX-512 or two AVX2 registers of doubles) add
// independently, and they are combined in one fixed tree at the end.
#pragma once

#include <algorithm>
#include <cstdint>

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
// of one (the largest value does not depend on the order).
template <class T>
T row_max(const T* x, int64_t n) {
  T acc[kSumLanes];
  for (int l = 0; l < kSumLanes; ++l) acc[l] = x[0];
  int64_t c = 0;
  for (; c + kSumLanes <= n; c += kSumLanes) {
    for (int l = 0; l < kSumLanes; ++l) acc[l] = std::max(acc[l], x[c + l]);
  }
  for (int l = 0; c + l < n; ++l) acc[l] = std::max(acc[l], x[c + l]);
  T m = acc[0];
  for (int l = 1; l < kSumLanes; ++l) m = std::max(m, acc[l]);
  return m;
}

// Rows per thread chunk for row-wise kernels: about 16k elements, so small inputs stay on
// one thread.
inline int64_t row_grain(int64_t C) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1));
}

}  // namespace vg::vec
