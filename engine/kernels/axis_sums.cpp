#include "engine/kernels/axis_sums.h"

#include <algorithm>

#include "engine/core/parallel.h"
#include "engine/kernels/permute_copy.h"

namespace vg::kernels {
namespace {

// acc[i] += base[r * ld + i] for rows r in [r0, r1), each column in row order. Columns go in
// groups of kGroup whose sums stay in registers through all the rows (a loop over whole rows
// stored every sum back to memory once per row); the order of the additions is the same.
template <class T>
void column_sums(const T* base, int64_t ld, int64_t r0, int64_t r1, int64_t n, double* acc) {
  constexpr int64_t kGroup = 64;
  int64_t i = 0;
  for (; i + kGroup <= n; i += kGroup) {
    double group[kGroup];
    for (int64_t l = 0; l < kGroup; ++l) group[l] = acc[i + l];
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = base + r * ld + i;
      for (int64_t l = 0; l < kGroup; ++l) group[l] += double(row[l]);
    }
    for (int64_t l = 0; l < kGroup; ++l) acc[i + l] = group[l];
  }
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t l = i; l < n; ++l) acc[l] += double(base[r * ld + l]);
}

}  // namespace

bool as_middle_axis(const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
                    int64_t& outer, int64_t& count, int64_t& inner) {
  outer = count = inner = 1;
  int state = 0;  // 0: before the reduced block, 1: inside, 2: after
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (reduced[i]) {
      if (state == 2) return false;
      state = 1;
      count *= shape[i];
    } else {
      if (state == 1) state = 2;
      (state == 0 ? outer : inner) *= shape[i];
    }
  }
  return true;
}

void add_column_chunks(const double* parts, int64_t chunks, int64_t width, float* dst) {
  for (int64_t i = 0; i < width; ++i) {
    double total = parts[i];
    for (int64_t s = 1; s < chunks; ++s) total += parts[s * width + i];
    dst[i] = float(total);
  }
}

template <class T>
void sum_middle_axis(const T* src, T* dst, int64_t outer, int64_t reduced, int64_t inner) {
  const int64_t R = reduced, I = inner;
  if (R == 0) {  // a sum of nothing
    std::fill(dst, dst + outer * I, T(0));
    return;
  }
  if (I == 1) {
    parallel_for(outer, std::max<int64_t>(1, 4096 / std::max<int64_t>(R, 1)),
                 [&](int64_t o0, int64_t o1) {
                   for (int64_t o = o0; o < o1; ++o) {
                     const T* row = src + o * R;
                     double acc = 0;
                     for (int64_t r = 0; r < R; ++r) acc += row[r];
                     dst[o] = static_cast<T>(acc);
                   }
                 });
    return;
  }
  // Columns: the (outer, inner) outputs in blocks of kBlock columns, and long columns cut
  // into chunks of kRows rows (a bias gradient sums 6400 rows into 64 columns: one block, which
  // would otherwise keep one thread busy and the others idle). Each (block, chunk) sums into
  // its own double accumulators, and the chunks are added in order: the cut depends on the
  // shape alone, so the bits do not depend on the thread count.
  constexpr int64_t kBlock = 256, kRows = kColumnSumRows;
  const int64_t blocks_per_outer = (I + kBlock - 1) / kBlock, chunks = (R + kRows - 1) / kRows;
  std::vector<double> part(outer * blocks_per_outer * chunks * kBlock);
  parallel_for(outer * blocks_per_outer * chunks,
               std::max<int64_t>(1, 8192 / std::max<int64_t>(std::min(R, kRows), 1)),
               [&](int64_t b0, int64_t b1) {
                 for (int64_t b = b0; b < b1; ++b) {
                   const int64_t block = b / chunks, chunk = b % chunks;
                   const int64_t o = block / blocks_per_outer,
                                 i0 = (block % blocks_per_outer) * kBlock;
                   const int64_t n = std::min(kBlock, I - i0);
                   const int64_t r0 = chunk * kRows, r1 = std::min(R, r0 + kRows);
                   column_sums(src + o * R * I + i0, I, r0, r1, n, part.data() + b * kBlock);
                 }
               });
  parallel_for(outer * blocks_per_outer, std::max<int64_t>(1, 8192 / (chunks * kBlock)),
               [&](int64_t k0, int64_t k1) {
                 for (int64_t block = k0; block < k1; ++block) {
                   const int64_t o = block / blocks_per_outer,
                                 i0 = (block % blocks_per_outer) * kBlock;
                   const int64_t n = std::min(kBlock, I - i0);
                   for (int64_t i = 0; i < n; ++i) {
                     double total = part[block * chunks * kBlock + i];
                     for (int64_t c = 1; c < chunks; ++c)
                       total += part[(block * chunks + c) * kBlock + i];
                     dst[o * I + i0 + i] = static_cast<T>(total);
                   }
                 }
               });
}

template <class T>
void sum_middle_axis_reference(const T* src, T* dst, int64_t outer, int64_t reduced,
                               int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t r = 0; r < reduced; ++r) acc += double(src[(o * reduced + r) * inner + i]);
      dst[o * inner + i] = static_cast<T>(acc);
    }
}

template <class T>
void sum_axes(const T* src, const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
              T* dst) {
  int64_t outer, count, inner;
  if (as_middle_axis(shape, reduced, outer, count, inner)) {
    sum_middle_axis(src, dst, outer, count, inner);
    return;
  }
  std::vector<int64_t> order;
  for (size_t i = 0; i < reduced.size(); ++i)
    if (!reduced[i]) order.push_back(static_cast<int64_t>(i));
  for (size_t i = 0; i < reduced.size(); ++i)
    if (reduced[i]) order.push_back(static_cast<int64_t>(i));
  outer = count = 1;
  for (size_t i = 0; i < reduced.size(); ++i) (reduced[i] ? count : outer) *= shape[i];
  std::vector<T> moved(static_cast<size_t>(outer * count));
  permute_copy(src, shape, order, moved.data());
  sum_middle_axis(moved.data(), dst, outer, count, int64_t{1});
}

#define VG_AXIS_SUMS(T)                                                                      \
  template void sum_middle_axis(const T*, T*, int64_t, int64_t, int64_t);                    \
  template void sum_middle_axis_reference(const T*, T*, int64_t, int64_t, int64_t);          \
  template void sum_axes(const T*, const std::vector<int64_t>&, const std::vector<bool>&, T*);
VG_AXIS_SUMS(float)
VG_AXIS_SUMS(double)
#undef VG_AXIS_SUMS

}  // namespace vg::kernels
