// The words of packed bf16 operands (engine/kernels/bf16_gemm_parts.h) as plain loops, one
// value at a time with to_bf16 and bf16_pair: what bf16_words_avx512.cpp runs on a CPU without
// AVX-512. A CPU with bf16 units always has AVX-512, so these run only where --amp bf16 is
// refused: in the tests, which then still run the packers and the plain model of the AMX tiles
// on the packed words.
#include "engine/kernels/bf16.h"
#include "engine/kernels/bf16_gemm_parts.h"

namespace vg::detail {
namespace plain {

void pairs_of_row(const float* x, int64_t k, uint32_t* out) {
  for (int64_t p = 0; 2 * p < k; ++p)
    out[p] = bf16_pair(x[2 * p], 2 * p + 1 < k ? x[2 * p + 1] : 0.0f);
}

void pairs_of_short_rows(const float* x, int64_t ld, int64_t rows, int64_t k, uint32_t* out,
                         int64_t out_ld) {
  for (int64_t i = 0; i < rows; ++i) pairs_of_row(x + i * ld, k, out + i * out_ld);
}

void pairs_of_rows(const float* first, const float* second, int64_t count, uint32_t* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = bf16_pair(first[i], second ? second[i] : 0.0f);
}

void pairs_of_kept_rows(const uint32_t* first, const uint32_t* second, int64_t count,
                        uint32_t* out) {
  auto value = [](const uint32_t* row, int64_t t) {  // the 16-bit half t of a row's words
    return t % 2 ? row[t / 2] >> 16 : row[t / 2] & 0xFFFFu;
  };
  for (int64_t t = 0; t < count; ++t)
    out[t] = value(first, t) | (second ? value(second, t) << 16 : 0u);
}

void interleave_rows_summing(int64_t k, int64_t count, const float* x, int64_t ld, uint32_t* out,
                             int64_t out_ld, double* sums) {
  for (int64_t p = 0; 2 * p < k; ++p) {
    const float* first = x + 2 * p * ld;
    const float* second = 2 * p + 1 < k ? first + ld : nullptr;
    pairs_of_rows(first, second, count, out + p * out_ld);
    for (int64_t i = 0; i < count; ++i) {  // each column's terms in the order of k
      sums[i] += double(first[i]);
      if (second) sums[i] += double(second[i]);
    }
  }
}

void round_rows(const float* x, int64_t ld, int64_t rows, int64_t cols, float* out,
                int64_t out_ld) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[i * out_ld + j] = from_bf16(to_bf16(x[i * ld + j]));
}

void transpose_words(const uint32_t* in, int64_t rows, int64_t cols, int64_t in_ld, uint32_t* out,
                     int64_t out_ld) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * out_ld + r] = in[r * in_ld + c];
}

}  // namespace plain
}  // namespace vg::detail
