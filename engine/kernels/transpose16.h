// A 16 x 16 block of 32-bit values transposed in registers (AVX-512): four rounds of shuffles,
// where a scalar loop would take a load and a store per element. The shuffles move bits and
// do no arithmetic, so the same function turns floats and packed bf16 pairs around.
// Internal to the kernels that pack operands (engine/kernels/gemm_avx512.cpp,
// engine/kernels/bf16_words_avx512.cpp).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/kernels/simd_build.h"

VG_AVX512_INTRINSICS_BEGIN

namespace vg::detail {

// Out row p = column p of a 16 x 16 block of `in` (rows ld apart): `rows` rows of it exist
// (the others count as zero) and `cols` columns are read, so `cols` rows are written (ldo
// apart), each its first `width` values (16: the zeros past `rows` too).
__attribute__((target("avx512f"))) inline void transpose16(const float* in, int64_t ld, int rows,
                                                           int cols, float* out, int64_t ldo,
                                                           int width = 16) {
  const __mmask16 mask = __mmask16((1u << cols) - 1), kept = __mmask16((1u << width) - 1);
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_maskz_loadu_ps(mask, in + i * ld) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 2) {  // pairs of rows, element by element
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 4)  // quads of rows: r[i + c] holds columns c, c+4, c+8, c+12
#pragma GCC unroll 16
    for (int h = 0; h < 2; ++h) {
      const __m512d lo = _mm512_castps_pd(t[i + h]), hi = _mm512_castps_pd(t[i + h + 2]);
      r[i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi));
      r[i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi));
    }
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 8)  // 128-bit quarters of two quads: columns c and c + 8
#pragma GCC unroll 16
    for (int c = 0; c < 4; ++c) {
      t[i + c] = _mm512_shuffle_f32x4(r[i + c], r[i + c + 4], 0x88);
      t[i + c + 4] = _mm512_shuffle_f32x4(r[i + c], r[i + c + 4], 0xdd);
    }
#pragma GCC unroll 16
  for (int c = 0; c < 8; ++c) {  // the halves of the block: whole columns
    const __m512 low = _mm512_shuffle_f32x4(t[c], t[c + 8], 0x88);
    const __m512 high = _mm512_shuffle_f32x4(t[c], t[c + 8], 0xdd);
    if (c < cols) _mm512_mask_storeu_ps(out + c * ldo, kept, low);
    if (c + 8 < cols) _mm512_mask_storeu_ps(out + (c + 8) * ldo, kept, high);
  }
}

}  // namespace vg::detail

VG_AVX512_INTRINSICS_END
