#include "engine/kernels/blas.h"

#include <cblas.h>
#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/kernels/axis_sums.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/gemm_simd.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/scratch.h"

extern "C" char* openblas_get_corename(void);

namespace vg {
namespace {

// Below this many multiply-adds a product is one block; above, it is cut into several.
constexpr double kSplitWork = 1 << 18;
// At most this many blocks, and no block thinner than kMinBlock rows (or columns).
constexpr int64_t kMaxBlocks = 4, kMinBlock = 16;

// The number of blocks a product is cut into: a power of two that depends on the shape
// only, never on the thread count, so every thread count runs the same block products on the
// same blocks and gets the same bits (OpenBLAS may pick another kernel for another shape).
int64_t block_count(int64_t m, int64_t n, int64_t k) {
  const double work = double(m) * n * k;
  const int64_t side = std::max(m, n);
  int64_t blocks = 1;
  while (blocks < kMaxBlocks && work >= kSplitWork * blocks * 2 && side >= kMinBlock * blocks * 2)
    blocks *= 2;
  return blocks;
}

void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// One block of a product on the calling thread. A float block goes to the engine's tiles
// where the CPU has them (gemm_simd_small: an fma chain per element over each chunk of k, in
// order), so that with them no float product depends on OpenBLAS: its kernel families sum in
// their own orders (and some without fmas), which made fp32 training's bits depend on the
// family OpenBLAS picked for the CPU. Double products (gradient checks), and float ones on a
// CPU without the tiles or with VITGRAD_GEMM=blas, go to OpenBLAS; with kOpenBlasOnly every one
// does (the library's rate, for `vitgrad bench --products`).
template <class T, bool kOpenBlasOnly = false>
void product_block(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                   int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float> && !kOpenBlasOnly)
    if (detail::gemm_simd_small(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
  const CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, opa, opb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
                beta, c, int(ldc));
  else
    cblas_dgemm(CblasRowMajor, opa, opb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
                beta, c, int(ldc));
}

// A deep product (k far larger than m and n: a weight gradient dW = dY^T X summed over every
// token of the batch) is cut along k instead: each block packs only its own slice of A and B,
// where cutting rows or columns of C would make every block pack all of the long operand
// again. The blocks' partial products go to scratch and are added to C in block order, so
// the bits depend on the shape alone.
constexpr int64_t kDeepRatio = 8;

template <class T, bool kOpenBlasOnly = false>
void gemm_split_k(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                  int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const int64_t blocks = block_count(1, k, m * n);  // the same rule, with k as the long side
  if (blocks == 1) {
    product_block<T, kOpenBlasOnly>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  thread_local std::vector<T> scratch;  // grown once per shape, then reused
  kernels::grow(scratch, blocks * m * n);
  T* part = scratch.data();
  parallel_for(blocks, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t l0 = k * q / blocks, l1 = k * (q + 1) / blocks;
      const T* a0 = ta ? a + l0 * lda : a + l0;  // op(A)'s columns l0.., op(B)'s rows l0..
      const T* b0 = tb ? b + l0 : b + l0 * ldb;
      product_block<T, kOpenBlasOnly>(ta, tb, m, n, l1 - l0, alpha, a0, lda, b0, ldb, T(0),
                                      part + q * m * n, n);
    }
  });
  parallel_for(m, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
               [&](int64_t i0, int64_t i1) {
                 for (int64_t i = i0; i < i1; ++i) {
                   T* ci = c + i * ldc;
                   for (int64_t j = 0; j < n; ++j) {
                     T sum = part[i * n + j];
                     for (int64_t q = 1; q < blocks; ++q) sum += part[(q * m + i) * n + j];
                     ci[j] = beta == T(0) ? sum : beta * ci[j] + sum;
                   }
                 }
               });
}

template <class T, bool kOpenBlasOnly = false>
void gemm_impl(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float> && !kOpenBlasOnly)
    if (matmul_precision() == MatmulPrecision::bf16)  // --amp bf16: every float product
      return gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (k == 0) {  // cblas rejects some of these; the product is empty, only beta acts
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  if constexpr (std::is_same_v<T, float> && !kOpenBlasOnly)
    if (detail::gemm_simd(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
  single_threaded_blas();
  if (k >= kDeepRatio * std::max(m, n)) {
    gemm_split_k<T, kOpenBlasOnly>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const int64_t blocks = block_count(m, n, k);
  if (blocks == 1) {
    product_block<T, kOpenBlasOnly>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // The blocks run in parallel, or one after the other inside a parallel region or on one
  // thread: the calls are the same either way.
  if (m >= n) {  // blocks of rows of C: rows of op(A)
    parallel_for(blocks, 1, [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t i0 = m * q / blocks, i1 = m * (q + 1) / blocks;
        const T* a0 = ta ? a + i0 : a + i0 * lda;
        product_block<T, kOpenBlasOnly>(ta, tb, i1 - i0, n, k, alpha, a0, lda, b, ldb, beta,
                                        c + i0 * ldc, ldc);
      }
    });
  } else {  // blocks of columns of C: columns of op(B)
    parallel_for(blocks, 1, [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t j0 = n * q / blocks, j1 = n * (q + 1) / blocks;
        const T* b0 = tb ? b + j0 * ldb : b + j0;
        product_block<T, kOpenBlasOnly>(ta, tb, m, j1 - j0, k, alpha, a, lda, b0, ldb, beta, c + j0,
                                        ldc);
      }
    });
  }
}

template <class T>
void gemm_bias_impl(int64_t m, int64_t n, int64_t k, const T* a, const T* b, const T* bias, T* c) {
  if constexpr (std::is_same_v<T, float>)
    if (matmul_precision() == MatmulPrecision::bf16)
      return gemm_bf16(false, true, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n, bias);
  if constexpr (std::is_same_v<T, float>)
    if (bias && detail::gemm_simd(false, true, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n, bias)) return;
  if (bias)
    parallel_for(m, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) std::copy_n(bias, n, c + r * n);
                 });
  gemm_impl(false, true, m, n, k, T(1), a, k, b, k, T(bias ? 1 : 0), c, n);
}

}  // namespace

void gemm_bias(int64_t m, int64_t n, int64_t k, const float* a, const float* b, const float* bias,
               float* c) {
  gemm_bias_impl(m, n, k, a, b, bias, c);
}

void gemm_bias(int64_t m, int64_t n, int64_t k, const double* a, const double* b,
               const double* bias, double* c) {
  gemm_bias_impl(m, n, k, a, b, bias, c);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (matmul_precision() == MatmulPrecision::bf16)
    return gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (detail::gemm_simd_small(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
  gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                  float* sums) {
  if (matmul_precision() == MatmulPrecision::bf16) return gemm_bf16_tn_sums(m, n, k, a, b, c, sums);
  if (detail::gemm_simd_tn_sums(m, n, k, a, b, c, sums)) return;
  gemm(true, false, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n);
  kernels::sum_middle_axis(a, sums, 1, k, m);
}

void gemm_tn_sums(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c,
                  double* sums) {
  gemm(true, false, m, n, k, 1.0, a, m, b, n, 0.0, c, n);
  kernels::sum_middle_axis(a, sums, 1, k, m);
}

bool products_make_rows() {
  return matmul_precision() == MatmulPrecision::bf16;
}

bool products_make_rows_for(int64_t rows, int64_t cols, int64_t n) {
  return products_make_rows() || detail::gemm_simd_makes_rows(rows, cols, n);
}

bool products_by_row_blocks(int64_t m, int64_t n, int64_t k) {
  return products_make_rows() || detail::gemm_simd_by_row_blocks(m, n, k);
}

bool products_keep_bf16() {
  return matmul_precision() == MatmulPrecision::bf16;
}

void gemm_bias_keeping_a(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                         const float* bias, float* c, Bf16Rows& kept, const RowsDone* done) {
  check(products_keep_bf16(), "gemm_bias_keeping_a: a bf16 copy asked for outside bf16 mode");
  gemm_bf16_keeping_a(m, n, k, a, b, bias, c, kept, Bf16Tiles::best, done);
}

void gemm_bias_rounded(const Bf16Rows& a, int64_t n, const float* b, const float* bias, float* c,
                       const RowsDone* done) {
  check(products_keep_bf16(), "gemm_bias_rounded: a bf16 operand outside bf16 mode");
  gemm_bf16_rounded_a(a, n, b, a.cols, c, n, bias, Bf16Tiles::best, done);
}

void gemm_then(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
               const RowsDone& done) {
  if (products_make_rows()) return gemm_bf16_then(m, n, k, a, b, done);
  check(detail::gemm_simd_then(m, n, k, a, b, done), "gemm_then: no product here hands the rows ",
        "of a ", m, " x ", n, " x ", k,
        " product over block by block (see products_by_row_blocks)");
}

void gemm_tn_sums(int64_t m, const float* a, const Bf16Rows& b, float* c, float* sums) {
  gemm_bf16_tn_sums(m, a, b, c, sums);
}

void gemm_bias_made(const MadeRows& a, int64_t n, const float* b, const float* bias, float* c,
                    const RowsDone* done) {
  if (products_make_rows())
    return gemm_bf16_made_a(a, n, b, a.cols, c, n, bias, Bf16Tiles::best, done);
  check(!done, "gemm_bias_made: the product's blocks asked for outside bf16 mode");
  if (detail::gemm_simd_made_a(a, n, b, bias, c)) return;
  gemm_bias(a.rows, n, a.cols, made_whole(a).data(), b, bias, c);
}

void gemm_tn_made(int64_t m, const float* a, const MadeRows& b, float* c) {
  if (products_make_rows()) return gemm_bf16_made_b(m, a, m, b, c, b.cols);
  if (detail::gemm_simd_tn_made(m, a, b, c)) return;
  gemm(true, false, m, b.cols, b.rows, 1.0f, a, m, made_whole(b).data(), b.cols, 0.0f, c, b.cols);
}

void gemm_on_openblas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  gemm_impl<float, true>(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

const char* float_tiles_name() {
  return detail::float_tiles_name(detail::float_tiles());
}

const char* blas_core_name() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}

bool blas_core_narrower_than_cpu(const char* core) {
  if (!core || !*core || !__builtin_cpu_supports("avx512f")) return false;
  for (const char* wide : {"skylakex", "cooperlake", "sapphirerapids"})
    if (!strcasecmp(core, wide)) return false;
  return true;
}

const char* blas_core_for_cpu() {
  const char* own = openblas_get_corename();
  if (std::getenv("OPENBLAS_CORETYPE") || !blas_core_narrower_than_cpu(own)) return nullptr;
  return "SkylakeX";  // its AVX-512 sgemm and dgemm, which Cooperlake's and later ones share
}

std::string blas_core_note() {
  std::string note;
  if (const char* dropped = std::getenv("VITGRAD_DROPPED_CORETYPE"))
    note = std::string("note: OPENBLAS_CORETYPE=") + dropped +
           " was ignored: this CPU runs wider kernels (set VITGRAD_KEEP_CORETYPE=1 to keep it)";
  if (const char* own = std::getenv("VITGRAD_UNRECOGNISED_CORE"))
    note += std::string(note.empty() ? "" : "\n") + "note: OpenBLAS chose its " + own +
            " kernels for this CPU, which it does not recognise; vitgrad set OPENBLAS_CORETYPE=" +
            blas_core_name();
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  if (note.empty() && forced && blas_core_narrower_than_cpu(forced))
    return std::string("warning: OPENBLAS_CORETYPE=") + forced +
           " forces narrower OpenBLAS kernels than this CPU supports (AVX-512)";
  return note;
}

}  // namespace vg
