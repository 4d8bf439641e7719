#include "engine/kernels/layer_norm_rows_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#if defined(__AVX2__) && defined(__FMA__)  // kLayerNormRowsAvx2 (the header)

namespace vg::detail {
namespace {

// row_sum's lanes 0-3 and 4-7 (engine/kernels/row_sum.h), or eight values widened to double.
struct Eight {
  __m256d low, high;
};

// The lanes below `count` of four floats (all four from 4 up, none at 0 or below).
__m128i lanes_below(int64_t count) {
  return _mm_cmpgt_epi32(_mm_set1_epi32(int(std::min<int64_t>(count, 8))),
                         _mm_setr_epi32(0, 1, 2, 3));
}
__m256d as_double_lanes(__m128i lanes) {
  return _mm256_castsi256_pd(_mm256_cvtepi32_epi64(lanes));
}

// The floats at x below `count` (a row's last vector has fewer than eight), as doubles, zero
// in the lanes past the row's end.
Eight widened(const float* x, int64_t count) {
  if (count >= 8) return {_mm256_cvtps_pd(_mm_loadu_ps(x)), _mm256_cvtps_pd(_mm_loadu_ps(x + 4))};
  return {_mm256_cvtps_pd(_mm_maskload_ps(x, lanes_below(count))),
          _mm256_cvtps_pd(_mm_maskload_ps(x + 4, lanes_below(count - 4)))};
}

// sum = f(sum) in the lanes below `count`: a row's last vector leaves the other lanes as they
// are, as row_sum's loop never touches them.
template <class F>
void update(Eight& sum, int64_t count, F f) {
  const Eight next{f(sum.low, 0), f(sum.high, 1)};
  if (count >= 8) {
    sum = next;
    return;
  }
  sum.low = _mm256_blendv_pd(sum.low, next.low, as_double_lanes(lanes_below(count)));
  sum.high = _mm256_blendv_pd(sum.high, next.high, as_double_lanes(lanes_below(count - 4)));
}

// ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7)), the tree row_sum ends with.
double combine(const Eight& sum) {
  alignas(32) double pairs[4];
  _mm256_store_pd(pairs, _mm256_add_pd(sum.low, sum.high));
  return (pairs[0] + pairs[1]) + (pairs[2] + pairs[3]);
}

// One row's values from its mean and rstd: ((x - mean) rstd) w + b as one fma (without a
// weight, (x - mean) rstd + b), as GCC contracts the generic loops.
void normalised_row(const float* x, const float* w, const float* b, double mean, double rstd,
                    float* y, int64_t C) {
  const __m256d centre = _mm256_set1_pd(mean), scale = _mm256_set1_pd(rstd);
  for (int64_t c = 0; c < C; c += 8) {
    const Eight v = widened(x + c, C - c);
    const Eight wv = w ? widened(w + c, C - c) : Eight{}, bv = b ? widened(b + c, C - c) : Eight{};
    for (int h = 0; h < 2; ++h) {
      const __m256d centred = _mm256_sub_pd(h ? v.high : v.low, centre);
      const __m256d wh = h ? wv.high : wv.low, bh = h ? bv.high : bv.low;
      __m256d out;
      if (w && b)
        out = _mm256_fmadd_pd(_mm256_mul_pd(centred, scale), wh, bh);
      else if (w)
        out = _mm256_mul_pd(_mm256_mul_pd(centred, scale), wh);
      else if (b)
        out = _mm256_fmadd_pd(centred, scale, bh);
      else
        out = _mm256_mul_pd(centred, scale);
      if (C - c >= 8)
        _mm_storeu_ps(y + c + 4 * h, _mm256_cvtpd_ps(out));
      else
        _mm_maskstore_ps(y + c + 4 * h, lanes_below(C - c - 4 * h), _mm256_cvtpd_ps(out));
    }
  }
}

// Rows [0, R) from x, C apart: (mean, rstd) into stats, values into y. Element c of a row is
// added to lane c % 8 of its sums, as row_sum does; the variance's terms (x - mean)^2 go in as
// one fma each, and the values are normalised_row's.
template <int R>
void normalise_rows(const float* x, const float* w, const float* b, double eps, float* y,
                    double* stats, int64_t C) {
  Eight sums[R];
  for (int r = 0; r < R; ++r) sums[r] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
  for (int64_t c = 0; c < C; c += 8)
    for (int r = 0; r < R; ++r) {
      const Eight v = widened(x + r * C + c, C - c);
      update(sums[r], C - c,
             [&](__m256d s, int h) { return _mm256_add_pd(s, h ? v.high : v.low); });
    }
  double mean[R];
  __m256d means[R];
  for (int r = 0; r < R; ++r) {
    mean[r] = combine(sums[r]) / double(C);
    means[r] = _mm256_set1_pd(mean[r]);
    sums[r] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
  }
  for (int64_t c = 0; c < C; c += 8)
    for (int r = 0; r < R; ++r) {
      const Eight v = widened(x + r * C + c, C - c);
      update(sums[r], C - c, [&](__m256d s, int h) {
        const __m256d d = _mm256_sub_pd(h ? v.high : v.low, means[r]);
        return _mm256_fmadd_pd(d, d, s);
      });
    }
  for (int r = 0; r < R; ++r) {
    const double rstd = 1.0 / std::sqrt(combine(sums[r]) / double(C) + eps);
    normalised_row(x + r * C, w, b, mean[r], rstd, y + r * C, C);
    stats[2 * r] = mean[r];
    stats[2 * r + 1] = rstd;
  }
}

// Rows at once, as on AVX-512 (layer_norm_rows_avx512.cpp): four rows' chains of additions
// side by side.
constexpr int kRowsAtOnce = 4;

}  // namespace

void layer_norm_rows_avx2(const float* x, const float* w, const float* b, double eps, float* y,
                          double* stats, int64_t rows, int64_t C) {
  int64_t i = 0;
  for (; i + kRowsAtOnce <= rows; i += kRowsAtOnce)
    normalise_rows<kRowsAtOnce>(x + i * C, w, b, eps, y + i * C, stats + 2 * i, C);
  for (; i < rows; ++i) normalise_rows<1>(x + i * C, w, b, eps, y + i * C, stats + 2 * i, C);
}

void layer_norm_apply_rows_avx2(const float* x, const float* w, const float* b, const double* stats,
                                float* y, int64_t rows, int64_t C) {
  for (int64_t i = 0; i < rows; ++i)
    normalised_row(x + i * C, w, b, stats[2 * i], stats[2 * i + 1], y + i * C, C);
}

}  // namespace vg::detail

#endif  // kLayerNormRowsAvx2
