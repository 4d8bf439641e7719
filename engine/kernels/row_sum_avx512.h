// row_sum's eight lanes (engine/kernels/row_sum.h) held in one AVX-512 register of doubles, and
// its final tree: for the hand-written AVX-512 rows that must give row_sum's bits
// (attention_rows.cpp, layer_norm_rows_avx512.cpp).
#pragma once

#include <immintrin.h>

#include "engine/kernels/row_sum.h"

namespace vg::vec {

// ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7)), the tree row_sum ends with.
__attribute__((target("avx512f"))) inline double combine_sum_lanes(__m512d lanes) {
  alignas(64) double a[kSumLanes];
  _mm512_store_pd(a, lanes);
  return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

}  // namespace vg::vec
