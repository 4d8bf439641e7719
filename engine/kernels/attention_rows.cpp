#include "engine/kernels/attention_rows.h"

#include <immintrin.h>

#include "engine/kernels/row_sum_avx512.h"
#include "engine/kernels/simd_build.h"

VG_AVX512_INTRINSICS_BEGIN

#if defined(__AVX512F__) && defined(__FMA__)  // kAttentionRowsAvx512 (the header)

namespace vg::detail {
namespace {

constexpr int kLanes = 16;

// Lanes [0, n - c) of the vector at column c: all 16 except in the last one.
inline __mmask16 lanes_from(int64_t c, int64_t n) {
  return n - c >= kLanes ? __mmask16(0xFFFF) : __mmask16((1u << (n - c)) - 1);
}

// vec::exp (engine/kernels/vec_math.h) on 16 lanes, operation for operation as GCC compiles the
// scalar code (its multiply-adds contracted to fmas), so every float gives the same bits;
// the clamps keep a NaN as std::min and std::max do.
__m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.3f), _mm512_max_ps(_mm512_set1_ps(-87.3f), x));
  const __m512 n =
      _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504f), _mm512_set1_ps(0.5f)),
                           _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  const __m512i biased = _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127));
  return _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(biased, 23)));
}

// The lower (half 0) or upper eight floats of x, widened to double.
__m512d widen(__m512 x, int half) {
  return _mm512_cvtps_pd(half ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))
                              : _mm512_castps512_ps256(x));
}

// acc (the eight lanes of vec::row_sum) += term(half) for the halves of a vector at columns
// c..c+15 of which the first `valid` exist: the lower eight first, as row_sum adds element
// c + l to lane l.
template <class Term>
__m512d add_lanes(__m512d acc, int64_t valid, Term term) {
  for (int half = 0; half < 2 && 8 * half < valid; ++half) {
    const int64_t left = valid - 8 * half;
    acc = _mm512_mask_add_pd(acc, left >= 8 ? 0xFF : __mmask8((1u << left) - 1), acc, term(half));
  }
  return acc;
}

// The largest of the 16 lanes, reduced in registers (stored and taken one lane after another,
// the 15 dependent maxima held each row back: a head's softmax took 2.13-2.20 us, 1.94-1.99 this
// way, on one core of an Intel Xeon of family 6 model 207). Any order gives the maximum's value:
// the lanes hold no NaN unless the row's first entry is one, and then every lane does (see
// softmax_rows); a max of +0 and -0 may come out as either, and the row's exponentials are the
// same for both.
float largest(__m512 x) {
  return _mm512_reduce_max_ps(x);
}

// Rows are done several at a time, each step for all of them before the next: one row alone
// is a chain of dependent steps (max, its reduction, exp, the sum, a division) whose latency the
// CPU could not hide. The softmax takes eight (50 x 50 scores of a head on an Intel Xeon of
// family 6 model 207, one core: 1.69-1.72 us against 1.94-1.99 with four), its gradient, whose
// chain is shorter, four (eight: 0.91 against 0.81 us).
constexpr int kSoftmaxRows = 8, kGradRows = 4;

// Softmax of R rows (ld apart) of n >= 1 entries in place.
template <int R>
void softmax_rows(float* p, int64_t ld, int64_t n) {
  // The max in any order is the same number; max(x, acc) keeps acc where x is NaN, as
  // std::max(acc, x) does.
  __m512 top[R];
  for (int r = 0; r < R; ++r) top[r] = _mm512_set1_ps(p[r * ld]);
  for (int64_t c = 0; c < n; c += kLanes) {
    const __mmask16 lanes = lanes_from(c, n);
    for (int r = 0; r < R; ++r)
      top[r] =
          _mm512_mask_max_ps(top[r], lanes, _mm512_maskz_loadu_ps(lanes, p + r * ld + c), top[r]);
  }
  __m512 m[R];
  __m512d acc[R];
  for (int r = 0; r < R; ++r) {
    m[r] = _mm512_set1_ps(largest(top[r]));
    acc[r] = _mm512_setzero_pd();
  }
  for (int64_t c = 0; c < n; c += kLanes) {
    const __mmask16 lanes = lanes_from(c, n);
    for (int r = 0; r < R; ++r) {
      float* row = p + r * ld + c;
      const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, row), m[r]));
      _mm512_mask_storeu_ps(row, lanes, e);
      acc[r] = add_lanes(acc[r], n - c, [&](int half) { return widen(e, half); });
    }
  }
  __m512 inv[R];
  for (int r = 0; r < R; ++r) inv[r] = _mm512_set1_ps(float(1.0 / vec::combine_sum_lanes(acc[r])));
  for (int64_t c = 0; c < n; c += kLanes) {
    const __mmask16 lanes = lanes_from(c, n);
    for (int r = 0; r < R; ++r) {
      float* row = p + r * ld + c;
      _mm512_mask_storeu_ps(row, lanes, _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, row), inv[r]));
    }
  }
}

// dS for R rows (ld apart) of P and dP, in place of dP.
template <int R>
void softmax_grad_rows(const float* p, float* ds, int64_t ld, int64_t n) {
  __m512d acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_pd();
  for (int64_t c = 0; c < n; c += kLanes) {  // sum_j double(ds_j) * p_j, in row_sum's lanes
    const __mmask16 lanes = lanes_from(c, n);
    for (int r = 0; r < R; ++r) {
      const __m512 d = _mm512_maskz_loadu_ps(lanes, ds + r * ld + c);
      const __m512 q = _mm512_maskz_loadu_ps(lanes, p + r * ld + c);
      acc[r] = add_lanes(acc[r], n - c,
                         [&](int half) { return _mm512_mul_pd(widen(d, half), widen(q, half)); });
    }
  }
  __m512 dot[R];
  for (int r = 0; r < R; ++r) dot[r] = _mm512_set1_ps(float(vec::combine_sum_lanes(acc[r])));
  for (int64_t c = 0; c < n; c += kLanes) {
    const __mmask16 lanes = lanes_from(c, n);
    for (int r = 0; r < R; ++r) {
      const __m512 d = _mm512_maskz_loadu_ps(lanes, ds + r * ld + c);
      const __m512 q = _mm512_maskz_loadu_ps(lanes, p + r * ld + c);
      _mm512_mask_storeu_ps(ds + r * ld + c, lanes, _mm512_mul_ps(q, _mm512_sub_ps(d, dot[r])));
    }
  }
}

}  // namespace

void softmax_rows_avx512(float* p, int64_t rows, int64_t n) {
  int64_t i = 0;
  for (; i + kSoftmaxRows <= rows; i += kSoftmaxRows) softmax_rows<kSoftmaxRows>(p + i * n, n, n);
  for (; i + 2 <= rows; i += 2) softmax_rows<2>(p + i * n, n, n);  // the rest in pairs
  for (; i < rows; ++i) softmax_rows<1>(p + i * n, n, n);
}

void softmax_grad_rows_avx512(const float* p, float* ds, int64_t rows, int64_t n) {
  int64_t i = 0;
  for (; i + kGradRows <= rows; i += kGradRows)
    softmax_grad_rows<kGradRows>(p + i * n, ds + i * n, n, n);
  for (; i < rows; ++i) softmax_grad_rows<1>(p + i * n, ds + i * n, n, n);
}

}  // namespace vg::detail

#endif  // kAttentionRowsAvx512

VG_AVX512_INTRINSICS_END
