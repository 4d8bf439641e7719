// Sums over axes in double, in an order fixed by the shape alone, so the bits do not depend
// on the thread count. The `sum` op and autograd's reduction of broadcast gradients both
// call sum_axes: one kernel, one summation order.
#pragma once

#include <cstdint>
#include <vector>

namespace vg::kernels {

// The input of `shape` seen as (outer, count, inner) with the reduced axes in the middle, or
// false when the reduced axes are not adjacent (size-1 axes skipped).
bool as_middle_axis(const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
                    int64_t& outer, int64_t& count, int64_t& inner);

// Columns are summed in chunks of this many rows, each chunk from zero in row order, and the
// chunk sums added in chunk order. A kernel that sums columns on its own way through them (the
// bf16 weight gradient, engine/kernels/bf16_gemm.h) keeps the same chunks to get the same bits.
constexpr int64_t kColumnSumRows = 1024;
// Such a kernel's finish: dst[i] = the chunk sums parts[s * width + i] added in chunk order.
void add_column_chunks(const double* parts, int64_t chunks, int64_t width, float* dst);

// dst[o, i] = sum over r of src[o, r, i]: the input seen as (outer, reduced, inner). Rows
// (inner == 1) are summed in order; columns in chunks of kColumnSumRows rows.
template <class T>
void sum_middle_axis(const T* src, T* dst, int64_t outer, int64_t reduced, int64_t inner);

// The same sums as one plain loop, r in order: equal bits when inner == 1 or reduced <= 1024.
template <class T>
void sum_middle_axis_reference(const T* src, T* dst, int64_t outer, int64_t reduced,
                               int64_t inner);

// dst = src of `shape` summed over the axes with reduced[i]; dst holds the kept axes in order.
// Reduced axes that are adjacent once size-1 axes are skipped are summed where they lie;
// otherwise src is first copied with the reduced axes moved last.
template <class T>
void sum_axes(const T* src, const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
              T* dst);

}  // namespace vg::kernels
