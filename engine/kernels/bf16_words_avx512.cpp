// The packers' words (engine/kernels/bf16_gemm_parts.h) on AVX-512: floats rounded to bf16 16
// at a time, pairs interleaved with one shuffle, words turned around 16 x 16 in registers; and
// at the end of the file the choice, at run time, between these loops and the plain ones of
// bf16_words.cpp, which the tests hold these to word for word.
//
// Each loop comes in two forms. Where the CPU has AVX512-BF16, vcvtne2ps2bf16 rounds 32 floats
// to nearest even in one instruction; it reads a subnormal float as zero, though, so a vector
// holding one is rounded by the integer add of engine/kernels/bf16.h instead (every other float,
// NaN and infinity included, the instruction rounds as to_bf16 does: checked on all 2^32
// patterns). Elsewhere the integer add rounds every vector. The words, and so every product's
// bits, are the same either way.
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/simd_build.h"
#include "engine/kernels/transpose16.h"

VG_AVX512_INTRINSICS_BEGIN

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

// Loads of 16 floats, words or doubles, the lanes past `mask` zero, a whole vector by a plain
// load. On an AMD EPYC of family 26, masked loads of memory not yet in cache waited far longer
// than plain ones (packing 6400 kept rows of 192 values out of cache: 0.62 -> 0.41 ms, and
// 0.22 ms with the rows asked for ahead), as if the prefetchers did not follow them.
__attribute__((target("avx512f"))) __m512 loaded(__mmask16 mask, const float* x) {
  return mask == 0xFFFF ? _mm512_loadu_ps(x) : _mm512_maskz_loadu_ps(mask, x);
}
__attribute__((target("avx512f"))) __m512i loaded(__mmask16 mask, const uint32_t* x) {
  return mask == 0xFFFF ? _mm512_loadu_si512(x) : _mm512_maskz_loadu_epi32(mask, x);
}
__attribute__((target("avx512f"))) __m512d loaded(__mmask8 mask, const double* x) {
  return mask == 0xFF ? _mm512_loadu_pd(x) : _mm512_maskz_loadu_pd(mask, x);
}
// The store that pairs with it: a whole vector by a plain store, so that the next load of the
// same doubles takes its value straight from the store.
__attribute__((target("avx512f"))) void stored(__mmask8 mask, double* x, __m512d v) {
  mask == 0xFF ? _mm512_storeu_pd(x, v) : _mm512_mask_storeu_pd(x, mask, v);
}

// The targets of the loops below: those of the integer add, and those of the units' form. A
// loop's integer form (kUnits false) is compiled for the units' targets too, but holds no bf16
// instruction (nothing here is plain C++ that the compiler could turn into one), so it runs on
// any CPU with AVX-512.
#define VG_WORDS_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512bf16")))

// Whether any of 32 floats is subnormal: then the units would read it as zero.
VG_WORDS_TARGET bool any_subnormal(__m512 a, __m512 b) {
  constexpr int kDenormal = 0x20;  // vfpclassps's category of subnormal values
  return (_mm512_fpclass_ps_mask(a, kDenormal) | _mm512_fpclass_ps_mask(b, kDenormal)) != 0;
}

// 32 consecutive floats, lo's 16 then hi's, as their 16 pairs: word w = (v[2w], v[2w + 1]).
template <bool kUnits>
VG_WORDS_TARGET __m512i pairs_of(__m512 lo, __m512 hi) {
  if constexpr (kUnits)
    if (!any_subnormal(lo, hi)) return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
  // The upper 16 bits of the 32 rounded floats, in order: the odd halves of the two vectors.
  const __m512i upper =
      _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27,
                       25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm512_permutex2var_epi16(round_to_bf16(lo), upper, round_to_bf16(hi));
}

// 16 floats of each of two rows side by side: word i = (first[i], second[i]).
template <bool kUnits>
VG_WORDS_TARGET __m512i interleaved(__m512 first, __m512 second) {
  if constexpr (kUnits)
    if (!any_subnormal(first, second)) {
      // The units give first's 16 bf16, then second's; word i takes halves i and 16 + i.
      const __m512i side_by_side =
          _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                           6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
      return _mm512_permutexvar_epi16(
          side_by_side, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(second, first)));
    }
  return _mm512_or_si512(
      _mm512_srli_epi32(round_to_bf16(first), 16),
      _mm512_and_si512(round_to_bf16(second), _mm512_set1_epi32(int(0xFFFF0000u))));
}

template <bool kUnits>
VG_WORDS_TARGET void pairs_of_row(const float* x, int64_t k, uint32_t* out) {
  for (int64_t p = 0; 2 * p < k; p += 16) {
    // The last 32 floats may be fewer: masked loads read zeros past k (an odd k's last pair
    // gets its zero second term that way), and a masked store writes only the pairs that exist.
    const int64_t left = k - 2 * p;
    const __mmask16 lo_mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __mmask16 hi_mask = left >= 32  ? __mmask16(0xFFFF)
                              : left > 16 ? __mmask16((1u << (left - 16)) - 1)
                                          : __mmask16(0);
    const __m512 lo = loaded(lo_mask, x + 2 * p);
    const __m512 hi = loaded(hi_mask, x + 2 * p + 16);
    const int64_t pairs = std::min<int64_t>(16, (left + 1) / 2);
    _mm512_mask_storeu_epi32(out + p, __mmask16((1u << pairs) - 1), pairs_of<kUnits>(lo, hi));
  }
}

template <bool kUnits>
VG_WORDS_TARGET void pairs_of_short_rows(const float* x, int64_t ld, int64_t rows, int64_t k,
                                         uint32_t* out, int64_t out_ld) {
  // pairs_of_row's one step, its masks set once for all the rows.
  const int64_t pairs = (k + 1) / 2;
  const __mmask16 lo_mask = k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << k) - 1);
  const __mmask16 hi_mask = k > 16 ? __mmask16((1u << (k - 16)) - 1) : __mmask16(0);
  const __mmask16 out_mask = __mmask16((1u << pairs) - 1);
  for (int64_t i = 0; i < rows; ++i) {
    const __m512 lo = loaded(lo_mask, x + i * ld);
    const __m512 hi = loaded(hi_mask, x + i * ld + 16);
    _mm512_mask_storeu_epi32(out + i * out_ld, out_mask, pairs_of<kUnits>(lo, hi));
  }
}

template <bool kUnits>
VG_WORDS_TARGET void pairs_of_rows(const float* first, const float* second, int64_t count,
                                   uint32_t* out) {
  for (int64_t i = 0; i < count; i += 16) {
    const __mmask16 mask = count - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (count - i)) - 1);
    const __m512 a = loaded(mask, first + i);
    const __m512 b = second ? loaded(mask, second + i) : _mm512_setzero_ps();
    _mm512_mask_storeu_epi32(out + i, mask, interleaved<kUnits>(a, b));
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
    const __m512i a = loaded(load, first + t / 2);
    const __m512i b = second ? loaded(load, second + t / 2) : _mm512_setzero_si512();
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
      const __m512i rounded = round_to_bf16(loaded(mask, x + i * ld + j));
      _mm512_mask_storeu_ps(out + i * out_ld + j, mask,
                            _mm512_castsi512_ps(_mm512_and_si512(rounded, high_half)));
    }
}

// Two pairs of rows at a time, each in the order it lies in memory (four rows of `count`
// floats), each line asked for one step (two pairs) ahead: the rows of a chunk are a thread's
// share of dY's, ld apart, and the prefetchers alone left the loop waiting on them. (A strip of
// columns walked down the whole of k, its sums in registers, as this once was, read lines ld
// apart all the way: on an AMD EPYC of family 26 the packing of a weight gradient's dY then
// took longer than the tiles' products on it.) The sums, a row of doubles, stay in L1; each
// vector of them is loaded and stored once per four rows, not two, as each load waits for the
// last store of the same sums: with 64 columns (four vectors) that wait set the pace.
template <bool kUnits>
VG_WORDS_TARGET void interleave_rows_summing(int64_t k, int64_t count, const float* x, int64_t ld,
                                             uint32_t* out, int64_t out_ld, double* sums) {
  for (int64_t p = 0; 2 * p < k; p += 2) {
    const float* first = x + 2 * p * ld;
    const int64_t rows = std::min<int64_t>(4, k - 2 * p);  // 4, or what is left at the end
    for (int64_t j = 0; j < count; j += 16) {
      const __mmask16 mask =
          count - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (count - j)) - 1);
      if (2 * p + 7 < k)  // the same line of the rows of the next step
        for (int64_t r = 4; r < 8; ++r)
          _mm_prefetch(reinterpret_cast<const char*>(first + r * ld + j), _MM_HINT_T0);
      __m512 v[4];
      for (int64_t r = 0; r < 4; ++r)
        v[r] = r < rows ? loaded(mask, first + r * ld + j) : _mm512_setzero_ps();
      // Whole vectors of sums by plain loads and stores too: a masked load also waits until the
      // last store of the same sums has left for the cache, instead of taking its value.
      __m512d low = loaded(__mmask8(mask), sums + j);
      __m512d high = loaded(__mmask8(mask >> 8), sums + j + 8);
      // No term at all past k: adding a zero would turn a -0 sum into +0.
      for (int64_t r = 0; r < rows; ++r) {
        low = _mm512_add_pd(low, widened(v[r], false));
        high = _mm512_add_pd(high, widened(v[r], true));
      }
      stored(__mmask8(mask), sums + j, low);
      stored(__mmask8(mask >> 8), sums + j + 8, high);
      _mm512_mask_storeu_epi32(out + p * out_ld + j, mask, interleaved<kUnits>(v[0], v[1]));
      if (rows > 2) {
        const __m512i second_pair = interleaved<kUnits>(v[2], v[3]);
        _mm512_mask_storeu_epi32(out + (p + 1) * out_ld + j, mask, second_pair);
      }
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

#undef VG_WORDS_TARGET

}  // namespace avx512

// Every CPU with bf16 units has both; a CPU without them packs only in the tests.
bool with_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return yes;
}

// Whether the loops' units' form runs here (every CPU with AVX512-BF16 has AVX512DQ too);
// VITGRAD_BF16_UNITS=none, which makes the engine act as a CPU without bf16 units, keeps the
// integer add.
bool with_units() {
  static const bool yes =
      with_avx512() && __builtin_cpu_supports("avx512dq") && bf16_hardware() != Bf16Hardware::none;
  return yes;
}

}  // namespace

void bf16_pairs_of_row(const float* x, int64_t k, uint32_t* out) {
  with_units()    ? avx512::pairs_of_row<true>(x, k, out)
  : with_avx512() ? avx512::pairs_of_row<false>(x, k, out)
                  : plain::pairs_of_row(x, k, out);
}

void bf16_pairs_of_short_rows(const float* x, int64_t ld, int64_t rows, int64_t k, uint32_t* out,
                              int64_t out_ld) {
  with_units()    ? avx512::pairs_of_short_rows<true>(x, ld, rows, k, out, out_ld)
  : with_avx512() ? avx512::pairs_of_short_rows<false>(x, ld, rows, k, out, out_ld)
                  : plain::pairs_of_short_rows(x, ld, rows, k, out, out_ld);
}

void bf16_pairs_of_rows(const float* first, const float* second, int64_t count, uint32_t* out) {
  with_units()    ? avx512::pairs_of_rows<true>(first, second, count, out)
  : with_avx512() ? avx512::pairs_of_rows<false>(first, second, count, out)
                  : plain::pairs_of_rows(first, second, count, out);
}

void bf16_pairs_of_kept_rows(const uint32_t* first, const uint32_t* second, int64_t count,
                             uint32_t* out) {
  with_avx512() ? avx512::pairs_of_kept_rows(first, second, count, out)
                : plain::pairs_of_kept_rows(first, second, count, out);
}

void interleave_rows_summing(int64_t k, int64_t count, const float* x, int64_t ld, uint32_t* out,
                             int64_t out_ld, double* sums) {
  with_units()    ? avx512::interleave_rows_summing<true>(k, count, x, ld, out, out_ld, sums)
  : with_avx512() ? avx512::interleave_rows_summing<false>(k, count, x, ld, out, out_ld, sums)
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

VG_AVX512_INTRINSICS_END
