// The packers' words (engine/kernels/bf16_gemm_parts.h) on AVX-512: floats rounded to bf16 16
// at a time, pairs interleaved with one shuffle, words turned around 16 x 16 in registers; and
// at the end of the file the choice, at run time, between these loops and the plain ones of
// bf16_words.cpp, which the tests hold these to word for word.
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/transpose16.h"

// GCC 12 inlines the plain (unmasked) shuffles as masked ones with an undefined pass-through
// vector, and then warns that it may be used uninitialised; it is never read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace vg::detail {
namespace {
// The loops, each named as the function it stands behind.
namespace avx512 {

// 16 floats rounded to bf16 in the upper half of each lane (the lower half is garbage): the
// integer add of engine/kernels/bf16.h, and a NaN keeps its bits with the quiet bit set.
__attribute__((target("avx512f"))) __m512i round_to_bf16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i lowest_kept = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_add_epi32(bits, _mm512_add_epi32(lowest_kept, _mm512_set1_epi32(0x7FFF)));
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_or_epi32(rounded, nan, bits, _mm512_set1_epi32(0x00400000));
}

// Lanes [0, 16) of v as doubles: the low 8 (upper = false) or the high 8.
__attribute__((target("avx512f"))) __m512d widened(__m512 v, bool upper) {
  return _mm512_cvtps_pd(upper ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))
                               : _mm512_castps512_ps256(v));
}

__attribute__((target("avx512f,avx512bw"))) void pairs_of_row(const float* x, int64_t k,
                                                              uint32_t* out) {
  // The upper 16 bits of 32 rounded floats, in order: the odd 16-bit halves of two vectors.
  alignas(64) static constexpr int16_t kUpperHalves[32] = {
      1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
      33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
  const __m512i upper = _mm512_load_si512(kUpperHalves);
  for (int64_t p = 0; 2 * p < k; p += 16) {
    // The last 32 floats may be fewer: masked loads read zeros past k (an odd k's last pair
    // gets its zero second term that way), and a masked store writes only the pairs that exist.
    const int64_t left = k - 2 * p;
    const __mmask16 lo_mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __mmask16 hi_mask = left >= 32  ? __mmask16(0xFFFF)
                              : left > 16 ? __mmask16((1u << (left - 16)) - 1)
                                          : __mmask16(0);
    const __m512i lo = round_to_bf16(_mm512_maskz_loadu_ps(lo_mask, x + 2 * p));
    const __m512i hi = round_to_bf16(_mm512_maskz_loadu_ps(hi_mask, x + 2 * p + 16));
    const int64_t pairs = std::min<int64_t>(16, (left + 1) / 2);
    _mm512_mask_storeu_epi32(out + p, __mmask16((1u << pairs) - 1),
                             _mm512_permutex2var_epi16(lo, upper, hi));
  }
}

__attribute__((target("avx512f,avx512bw"))) void pairs_of_short_rows(const float* x, int64_t ld,
                                                                     int64_t rows, int64_t k,
                                                                     uint32_t* out,
                                                                     int64_t out_ld) {
  // bf16_pairs_of_row's one step, its masks and shuffle set once for all the rows.
  alignas(64) static constexpr int16_t kUpperHalves[32] = {
      1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
      33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
  const __m512i upper = _mm512_load_si512(kUpperHalves);
  const int64_t pairs = (k + 1) / 2;
  const __mmask16 lo_mask = k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << k) - 1);
  const __mmask16 hi_mask = k > 16 ? __mmask16((1u << (k - 16)) - 1) : __mmask16(0);
  const __mmask16 out_mask = __mmask16((1u << pairs) - 1);
  for (int64_t i = 0; i < rows; ++i) {
    const __m512i lo = round_to_bf16(_mm512_maskz_loadu_ps(lo_mask, x + i * ld));
    const __m512i hi = round_to_bf16(_mm512_maskz_loadu_ps(hi_mask, x + i * ld + 16));
    _mm512_mask_storeu_epi32(out + i * out_ld, out_mask, _mm512_permutex2var_epi16(lo, upper, hi));
  }
}

__attribute__((target("avx512f"))) void pairs_of_rows(const float* first, const float* second,
                                                      int64_t count, uint32_t* out) {
  const __m512i high_half = _mm512_set1_epi32(int(0xFFFF0000u));
  for (int64_t i = 0; i < count; i += 16) {
    const __mmask16 mask = count - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (count - i)) - 1);
    const __m512i lo = _mm512_srli_epi32(round_to_bf16(_mm512_maskz_loadu_ps(mask, first + i)), 16);
    const __m512i hi =
        second ? _mm512_and_si512(round_to_bf16(_mm512_maskz_loadu_ps(mask, second + i)), high_half)
               : _mm512_setzero_si512();
    _mm512_mask_storeu_epi32(out + i, mask, _mm512_or_si512(lo, hi));
  }
}

__attribute__((target("avx512f,avx512bw"))) void pairs_of_kept_rows(const uint32_t* first,
                                                                    const uint32_t* second,
                                                                    int64_t count, uint32_t* out) {
  // Value t of `first` (16-bit half t of its words) into the low half of out's word t, the
  // same value of `second` into the high half: 16 values of each make 16 words.
  alignas(64) static constexpr int16_t kLowFirst[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                        37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                        11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr int16_t kHighFirst[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                         53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                         27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i low = _mm512_load_si512(kLowFirst), high = _mm512_load_si512(kHighFirst);
  for (int64_t t = 0; t < count; t += 32) {
    // 32 values (16 words) of each row at a time; masked loads read zeros past the last word.
    const int64_t left = count - t, words = std::min<int64_t>(16, (left + 1) / 2);
    const __mmask16 load = __mmask16((1u << words) - 1);
    const __m512i a = _mm512_maskz_loadu_epi32(load, first + t / 2);
    const __m512i b =
        second ? _mm512_maskz_loadu_epi32(load, second + t / 2) : _mm512_setzero_si512();
    const __mmask16 lo_store = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    _mm512_mask_storeu_epi32(out + t, lo_store, _mm512_permutex2var_epi16(a, low, b));
    if (left > 16) {
      const __mmask16 hi_store =
          left >= 32 ? __mmask16(0xFFFF) : __mmask16((1u << (left - 16)) - 1);
      _mm512_mask_storeu_epi32(out + t + 16, hi_store, _mm512_permutex2var_epi16(a, high, b));
    }
  }
}

__attribute__((target("avx512f"))) void round_rows(const float* x, int64_t ld, int64_t rows,
                                                   int64_t cols, float* out, int64_t out_ld) {
  if (ld == cols && out_ld == cols) cols *= rows, rows = 1;  // end to end: one long row
  const __m512i high_half = _mm512_set1_epi32(int(0xFFFF0000u));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 mask = cols - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (cols - j)) - 1);
      const __m512i rounded = round_to_bf16(_mm512_maskz_loadu_ps(mask, x + i * ld + j));
      _mm512_mask_storeu_ps(out + i * out_ld + j, mask,
                            _mm512_castsi512_ps(_mm512_and_si512(rounded, high_half)));
    }
}

// A strip of 64 columns at a time, its sums in registers for the whole of k: loaded and
// stored once, not once per pair of rows (which cost more than the packing itself).
__attribute__((target("avx512f"))) void interleave_rows_summing(int64_t k, int64_t count,
                                                                const float* x, int64_t ld,
                                                                uint32_t* out, int64_t out_ld,
                                                                double* sums) {
  constexpr int kVectors = 4;
  const __m512i high_half = _mm512_set1_epi32(int(0xFFFF0000u));
  for (int64_t j0 = 0; j0 < count; j0 += 16 * kVectors) {
    __mmask16 mask[kVectors];
    __m512d low[kVectors], high[kVectors];  // the sums of columns j0 + 16v + [0, 8) and [8, 16)
    for (int v = 0; v < kVectors; ++v) {
      const int64_t cols = std::clamp<int64_t>(count - j0 - 16 * v, 0, 16);
      mask[v] = __mmask16((1u << cols) - 1);
      low[v] = _mm512_maskz_loadu_pd(__mmask8(mask[v]), sums + j0 + 16 * v);
      high[v] = _mm512_maskz_loadu_pd(__mmask8(mask[v] >> 8), sums + j0 + 16 * v + 8);
    }
    for (int64_t p = 0; p < (k + 1) / 2; ++p) {
      const float* first = x + 2 * p * ld + j0;
      const bool second = 2 * p + 1 < k;
      for (int v = 0; v < kVectors; ++v) {
        const __m512 a = _mm512_maskz_loadu_ps(mask[v], first + 16 * v);
        low[v] = _mm512_add_pd(low[v], widened(a, false));
        high[v] = _mm512_add_pd(high[v], widened(a, true));
        __m512i words = _mm512_srli_epi32(round_to_bf16(a), 16);
        if (second) {
          const __m512 b = _mm512_maskz_loadu_ps(mask[v], first + ld + 16 * v);
          low[v] = _mm512_add_pd(low[v], widened(b, false));
          high[v] = _mm512_add_pd(high[v], widened(b, true));
          words = _mm512_or_si512(words, _mm512_and_si512(round_to_bf16(b), high_half));
        }
        _mm512_mask_storeu_epi32(out + p * out_ld + j0 + 16 * v, mask[v], words);
      }
    }
    for (int v = 0; v < kVectors; ++v) {
      _mm512_mask_storeu_pd(sums + j0 + 16 * v, __mmask8(mask[v]), low[v]);
      _mm512_mask_storeu_pd(sums + j0 + 16 * v + 8, __mmask8(mask[v] >> 8), high[v]);
    }
  }
}

// out[c * out_ld + r] = in[r * in_ld + c] for a rows x cols matrix of words, 16 x 16 at a
// time in registers; nothing else of out is written.
__attribute__((target("avx512f"))) void transpose_words(const uint32_t* in, int64_t rows,
                                                        int64_t cols, int64_t in_ld, uint32_t* out,
                                                        int64_t out_ld) {
  const float* from = reinterpret_cast<const float*>(in);  // moved, never computed on
  float* to = reinterpret_cast<float*>(out);
  for (int64_t c = 0; c < cols; c += 16)
    for (int64_t r = 0; r < rows; r += 16) {
      const int height = int(std::min<int64_t>(16, rows - r));
      transpose16(from + r * in_ld + c, in_ld, height, int(std::min<int64_t>(16, cols - c)),
                  to + c * out_ld + r, out_ld, height);
    }
}

}  // namespace avx512

// Every CPU with bf16 units has both; a CPU without them packs only in the tests.
bool with_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return yes;
}

}  // namespace

void bf16_pairs_of_row(const float* x, int64_t k, uint32_t* out) {
  with_avx512() ? avx512::pairs_of_row(x, k, out) : plain::pairs_of_row(x, k, out);
}

void bf16_pairs_of_short_rows(const float* x, int64_t ld, int64_t rows, int64_t k, uint32_t* out,
                              int64_t out_ld) {
  with_avx512() ? avx512::pairs_of_short_rows(x, ld, rows, k, out, out_ld)
                : plain::pairs_of_short_rows(x, ld, rows, k, out, out_ld);
}

void bf16_pairs_of_rows(const float* first, const float* second, int64_t count, uint32_t* out) {
  with_avx512() ? avx512::pairs_of_rows(first, second, count, out)
                : plain::pairs_of_rows(first, second, count, out);
}

void bf16_pairs_of_kept_rows(const uint32_t* first, const uint32_t* second, int64_t count,
                             uint32_t* out) {
  with_avx512() ? avx512::pairs_of_kept_rows(first, second, count, out)
                : plain::pairs_of_kept_rows(first, second, count, out);
}

void interleave_rows_summing(int64_t k, int64_t count, const float* x, int64_t ld, uint32_t* out,
                             int64_t out_ld, double* sums) {
  with_avx512() ? avx512::interleave_rows_summing(k, count, x, ld, out, out_ld, sums)
                : plain::interleave_rows_summing(k, count, x, ld, out, out_ld, sums);
}

void bf16_round_rows(const float* x, int64_t ld, int64_t rows, int64_t cols, float* out,
                     int64_t out_ld) {
  with_avx512() ? avx512::round_rows(x, ld, rows, cols, out, out_ld)
                : plain::round_rows(x, ld, rows, cols, out, out_ld);
}

void transpose_words(const uint32_t* in, int64_t rows, int64_t cols, int64_t in_ld, uint32_t* out,
                     int64_t out_ld) {
  with_avx512() ? avx512::transpose_words(in, rows, cols, in_ld, out, out_ld)
                : plain::transpose_words(in, rows, cols, in_ld, out, out_ld);
}

}  // namespace vg::detail
