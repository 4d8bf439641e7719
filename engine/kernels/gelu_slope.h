// GELU's value and slope in one pass over an array (the erf form shares Phi(h) between the
// two), and the slope applied to a gradient: what a fused linear with a GELU input needs.
// Per element exactly gelu_math's erf_value / erf_derivative (or the tanh forms), so the
// values have the gelu op's bits.
#pragma once

#include <cstdint>

namespace vg::kernels {

// a[i] = gelu(h[i]), slope[i] = gelu'(h[i]); the tanh form when tanh_form.
template <class T>
void gelu_with_slope(const T* h, T* a, T* slope, int64_t n, bool tanh_form);

// a[i] = gelu(h[i]) and d[i] *= gelu'(h[i]) in one pass: gelu_with_slope then
// multiply_by_slope, with their bits, without a slope array written and read back.
template <class T>
void gelu_with_grad(const T* h, T* a, T* d, int64_t n, bool tanh_form);

// gelu_with_grad on rows [r0, r1) of `cols` columns, on the calling thread, with d's rows read
// from `d_rows` (row r0 first) and written to d: for a product that hands it each block of d's
// rows as it finishes them (made_rows.h RowsDone), so they are not written out and read back
// between. d_rows may be d + r0 * cols.
void gelu_with_grad_rows(const float* h, const float* d_rows, float* d, float* a, int64_t r0,
                         int64_t r1, int64_t cols, bool tanh_form);

// gelu_with_grad over `rows` rows of `cols`, with a's values rounded to bf16 as they are made,
// by pairs of rows: word (p, j) = bf16_pair(a[2p][j], a[2p + 1][j]) (the second zero past an
// odd rows) at words[p * ld + j], ld = cols rounded up to 16, the words between zero: a bf16
// operand kept for a weight gradient's product (bf16_gemm.h Bf16Rows, row_pairs), which rounds
// them the same way. Half the bytes of a's floats.
void gelu_with_grad_bf16(const float* h, uint32_t* words, float* d, int64_t rows, int64_t cols,
                         bool tanh_form);

// gelu_with_grad_bf16 on rows [r0, r1) of the same `rows`, on the calling thread, r0 even (a
// pair of rows in one call), with d's rows read from `d_rows` (row r0 first) and written to d:
// for a product that hands it each block of d's rows as it finishes them (made_rows.h
// RowsDone), so they are not written out and read back between. d_rows may be d + r0 * cols.
void gelu_with_grad_bf16_rows(const float* h, const float* d_rows, float* d, uint32_t* words,
                              int64_t r0, int64_t r1, int64_t rows, int64_t cols, bool tanh_form);

// gelu_with_slope over n elements on the calling thread, the slope left out where `slope` is
// null: for a kernel that makes GELU's values a block at a time while the block is in cache
// (gelu_grn_samples in global_response_norm.h).
template <class T>
void gelu_block(const T* h, T* a, T* slope, int64_t n, bool tanh_form);

// d[i] *= slope[i]: the chain rule through GELU, in place.
template <class T>
void multiply_by_slope(T* d, const T* slope, int64_t n);

}  // namespace vg::kernels
