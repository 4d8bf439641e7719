#include "engine/blas.h"

#include <cblas.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "engine/parallel.h"

extern "C" char* openblas_get_corename(void);

namespace vg {
namespace {

// Below this many multiply-adds a product is not worth splitting across threads.
constexpr double kSplitWork = 1 << 18;

void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

template <class T>
void blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, opa, opb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
                beta, c, int(ldc));
  else
    cblas_dgemm(CblasRowMajor, opa, opb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
                beta, c, int(ldc));
}

template <class T>
void gemm_impl(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // cblas rejects some of these; the product is empty, only beta acts
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  single_threaded_blas();
  const int threads = num_threads();
  if (threads <= 1 || omp_in_parallel() || double(m) * n * k < kSplitWork) {
    blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (m >= n) {  // blocks of rows of C: rows of op(A)
    parallel_for(m, 16, [&](int64_t i0, int64_t i1) {
      const T* a0 = ta ? a + i0 : a + i0 * lda;
      blas(ta, tb, i1 - i0, n, k, alpha, a0, lda, b, ldb, beta, c + i0 * ldc, ldc);
    });
  } else {  // blocks of columns of C: columns of op(B)
    parallel_for(n, 16, [&](int64_t j0, int64_t j1) {
      const T* b0 = tb ? b + j0 * ldb : b + j0;
      blas(ta, tb, m, j1 - j0, k, alpha, a, lda, b0, ldb, beta, c + j0, ldc);
    });
  }
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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

std::string blas_core_note() {
  if (const char* dropped = std::getenv("VITGRAD_DROPPED_CORETYPE"))
    return std::string("note: OPENBLAS_CORETYPE=") + dropped +
           " was ignored: this CPU runs wider kernels (set VITGRAD_KEEP_CORETYPE=1 to keep it)";
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  if (forced && blas_core_narrower_than_cpu(forced))
    return std::string("warning: OPENBLAS_CORETYPE=") + forced +
           " forces narrower OpenBLAS kernels than this CPU supports (AVX-512)";
  return "";
}

}  // namespace vg
