// One attention head, forward and backward: S = s Q K^T, P = softmax of S's rows, O = P V.
// Each product is one call of the engine's own small gemm (kernels/blas.h) on the whole
// per-head matrices, on the calling thread, so a head is always the same sequence of calls
// and the bits do not depend on the thread count. The softmax rows sum in double
// (kernels/row_sum.h, vec_math.h; for float in AVX-512 builds, attention_rows.h).
#pragma once

#include <cstdint>

namespace vg::kernels {

// Where one head's matrices live: each a (rows, D) block with its own row stride, so a
// head can be read straight out of a packed (B, T, 3, H, D) qkv and written into (B, T, H, D).
template <class T>
struct HeadView {
  T* data;
  int64_t ld;
};

// P (Tq, Tk, stored Tk apart) and O (Tq, D) of one head; scale is s = D^-0.5.
template <class T>
void attention_head_forward(HeadView<const T> q, HeadView<const T> k, HeadView<const T> v, T* p,
                            HeadView<T> o, int64_t Tq, int64_t Tk, int64_t D, double scale);

// Backward of one head from P and dO. dq, dk, dv may be null (not needed); ds is a (Tq, Tk)
// scratch.
//   dV = P^T dO;  dP = dO V^T;  D_i = sum_j dP_ij P_ij;  dS = P * (dP - D_i);
//   dQ = s dS K;  dK = s dS^T Q.
template <class T>
void attention_head_backward(HeadView<const T> q, HeadView<const T> k, HeadView<const T> v,
                             const T* p, HeadView<const T> dout, HeadView<T> dq, HeadView<T> dk,
                             HeadView<T> dv, T* ds, int64_t Tq, int64_t Tk, int64_t D,
                             double scale);

// The forward as plain loops in double with std::exp: within 1e-12 of the kernel in float64.
template <class T>
void attention_head_forward_reference(HeadView<const T> q, HeadView<const T> k,
                                      HeadView<const T> v, T* p, HeadView<T> o, int64_t Tq,
                                      int64_t Tk, int64_t D, double scale);

// The backward as plain loops in double, term by term as written above: within 1e-12 of the
// kernel in float64. dq, dk, dv may be null.
template <class T>
void attention_head_backward_reference(HeadView<const T> q, HeadView<const T> k,
                                       HeadView<const T> v, const T* p, HeadView<const T> dout,
                                       HeadView<T> dq, HeadView<T> dk, HeadView<T> dv, int64_t Tq,
                                       int64_t Tk, int64_t D, double scale);

// Asks L2 for the rows that the next head will read while this one computes. A head's rows
// lie 3C floats apart in a packed qkv, too few of them for the hardware prefetcher to
// follow, and the first loads of each head stalled its products. L2, not L1: the next
// head's rows (in backward with its P and dO, 23 KB at head dim 16) asked into a 32 KB L1
// pushed out the rows the current head was reading, and the heads ran no faster than with
// no requests at all.
template <class T>
void prefetch_rows(const T* m, int64_t ld, int64_t rows, int64_t cols) {
  constexpr int kRead = 0, kIntoL2 = 2;  // locality 2: prefetcht1
  const int64_t bytes = cols * int64_t(sizeof(T));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < bytes; b += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(m + r * ld) + b, kRead, kIntoL2);
}

}  // namespace vg::kernels
