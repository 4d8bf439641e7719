// Small bf16 products on float fmas (Bf16Tiles::fma, engine/kernels/bf16_gemm.h).
//
// The product of two bf16 is exact in float (8 + 8 significant bits fit in 24), so an fma of
// two operands rounded to bf16 adds exactly the product a bf16 unit would, and a chain of fmas
// is a product of bf16 operands with float sums: the meaning of --amp bf16. The operands are
// rounded into float scratch and multiplied by the fp32 kernel's small-product loops
// (engine/kernels/gemm_simd.h): one fma chain per element of C over each chunk of 256 terms.
// One difference from the bf16 units, which read a subnormal bf16 as zero: fmas keep it, so
// this route is the closer of the two to the exact product of the rounded operands.
//
// Why: an attention head (50 x 50 x 16 or 32) is too small for the AMX tiles' fixed costs, and
// on the Intel Xeon measured (family 6 model 207) the AVX512-BF16 loops ran a head no faster
// than fp32's fmas and paid besides for packing its operands as pairs: a head of 16, forward
// and backward, 7.9 + 10.3 us on them against fp32's 5.9 + 5.7 us. Rounded operands on fmas
// ran it in 6.4 + 7.0 us (fp32 5.6 + 5.3 in the same run).
#include "engine/kernels/bf16.h"
#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/gemm_simd.h"
#include "engine/kernels/scratch.h"

namespace vg::detail {

void bf16_product_fma(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc, const float* start) {
  thread_local PackedFloats a_rounded, b_rounded;  // grown once per shape, then reused
  kernels::grow(a_rounded, m * k);
  kernels::grow(b_rounded, n * k);
  // Each operand rounded as it is stored (op(A) k rows of m when transposed), except that the
  // fp32 loops take one transposed operand at most: with both, op(A) is written out m x k.
  const bool a_transposed = ta && !tb;
  if (ta && tb) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t l = 0; l < k; ++l) a_rounded[i * k + l] = from_bf16(to_bf16(a[l * lda + i]));
  } else {
    bf16_round_rows(a, lda, ta ? k : m, ta ? m : k, a_rounded.data(), ta ? m : k);
  }
  bf16_round_rows(b, ldb, tb ? n : k, tb ? k : n, b_rounded.data(), tb ? k : n);
  // AVX-512's tiles wherever there are bf16 units; AVX2's only in the tests of a CPU without
  // them. Both make each element as the same chain of fmas.
  static const TiledProducts& tiles =
      __builtin_cpu_supports("avx512f") ? avx512_products() : avx2_products();
  tiles.small_product(a_transposed, tb, m, n, k, alpha, a_rounded.data(), a_transposed ? m : k,
                      b_rounded.data(), tb ? k : n, beta, c, ldc, start);
}

}  // namespace vg::detail
