// The last step of the AVX-512 tile loops, the float products' (gemm_avx512.cpp) and the bf16
// products' (bf16_gemm_avx512.cpp) alike: a tile's R x V vectors of sums into C.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace vg::detail {

// C[R x 16V] = alpha * acc + beta * C, rows ldc apart, the last vector of each row masked to
// `last`. Inlined into each tile, whose sums stay in registers.
template <int R, int V>
__attribute__((target("avx512f"), always_inline)) inline void store_tile(const __m512 (&acc)[R][V],
                                                                         float alpha, float beta,
                                                                         float* c, int64_t ldc,
                                                                         __mmask16 last) {
  constexpr int kLanes = 16;
  const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      float* cp = c + r * ldc + v * kLanes;
      const __mmask16 mask = v == V - 1 ? last : __mmask16(0xFFFF);
      __m512 out = alpha == 1.0f ? acc[r][v] : _mm512_mul_ps(alpha_v, acc[r][v]);
      if (beta != 0.0f) {  // beta = 0: C is not read (BLAS semantics: NaN there is dropped)
        const __m512 old = _mm512_maskz_loadu_ps(mask, cp);
        out = beta == 1.0f ? _mm512_add_ps(out, old) : _mm512_fmadd_ps(beta_v, old, out);
      }
      _mm512_mask_storeu_ps(cp, mask, out);
    }
}

}  // namespace vg::detail
