// Scaled dot-product attention, fused per (batch, head): S = s Q K^T, P = softmax_rows(S),
// O = P V with s = D^-0.5. The (batch, head) pairs are independent, so they run in
// parallel, one head per task; within a head the products are each one call on the whole
// per-head matrices (engine/kernels/blas.h gemm_small), and the softmax is a row loop with double
// sums (engine/kernels/row_sum.h, vec_math.h; for float in AVX-512 builds, attention_rows.h).
//
// Threads: heads run in parallel, one task per range of heads, and each product inside a
// task runs on its thread (engine/kernels/blas.h), so the bits do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/kernels/attention_rows.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/row_sum.h"
#include "engine/kernels/vec_math.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

// Row-major C (m x n) = alpha * op(A) op(B), op = transpose when ta / tb: one head's
// product, small enough for the engine's own kernel (engine/kernels/blas.h).
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T* c, int64_t ldc) {
  vg::gemm_small(ta, tb, m, n, k, T(alpha), a, lda, b, ldb, T(0), c, ldc);
}

struct AttentionShape {
  int64_t heads = 0;  // B * H
  int64_t Tq = 0, Tk = 0, D = 0;
};

AttentionShape check_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  check(q.defined() && k.defined() && v.defined(), "scaled_dot_product_attention: undefined input");
  auto shapes = [&] {
    return cat_str("(q ", shape_str(q.shape()), ", k ", shape_str(k.shape()), ", v ",
                   shape_str(v.shape()), ")");
  };
  check(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
        "scaled_dot_product_attention: q, k and v must be (B, H, T, D) ", shapes());
  for (int axis : {0, 1, 3}) {
    check(k.size(axis) == q.size(axis) && v.size(axis) == q.size(axis),
          "scaled_dot_product_attention: q, k and v differ in ",
          axis == 0   ? "batch size B"
          : axis == 1 ? "head count H"
                      : "head dim D",
          " ", shapes());
  }
  check(k.size(2) == v.size(2), "scaled_dot_product_attention: k has ", k.size(2),
        " tokens and v has ", v.size(2), " ", shapes());
  check(k.size(2) > 0, "scaled_dot_product_attention: no keys to attend to ", shapes());
  check(k.dtype() == q.dtype() && v.dtype() == q.dtype(),
        "scaled_dot_product_attention: q, k and v are ", dtype_name(q.dtype()), ", ",
        dtype_name(k.dtype()), " and ", dtype_name(v.dtype()), " ", shapes());
  return AttentionShape{q.size(0) * q.size(1), q.size(2), k.size(2), q.size(3)};
}

// Runs body(h0, h1) over ranges of heads in parallel; inside a task each product runs on
// the calling thread (engine/kernels/blas.h), so a head is always the same sequence of calls.
template <class F>
void for_each_head(const AttentionShape& s, F&& body) {
  const int64_t work = s.Tq * s.Tk * std::max<int64_t>(s.D, 1);
  parallel_for(s.heads, std::max<int64_t>(1, 32768 / std::max<int64_t>(work, 1)), body);
}

// Where one head's matrices live: each a (rows, D) block with its own row stride, so a
// head can be read straight out of a packed (B, T, 3, H, D) qkv and written into (B, T, H, D).
template <class T>
struct HeadView {
  T* data;
  int64_t ld;
};

// Asks the caches for the rows that the next head will read while this one computes. A
// head's rows lie 3C floats apart in a packed qkv, too few of them for the hardware
// prefetcher to follow, and the first loads of each head stalled its products.
template <class T>
void prefetch_rows(const T* m, int64_t ld, int64_t rows, int64_t cols) {
  const int64_t bytes = cols * int64_t(sizeof(T));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < bytes; b += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(m + r * ld) + b);
}

// One row of the softmax in place: subtract the max, exponentiate, divide by the sum.
template <class T>
void softmax_row(T* row, int64_t n) {
  const T m = vec::row_max(row, n);
  for (int64_t j = 0; j < n; ++j) row[j] = vec::exp_of(row[j] - m);
  const T inv = T(1.0 / vec::row_sum(n, [&](int64_t j) { return row[j]; }));
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

// P = softmax of each of the Tq rows of S (Tk entries each), in place.
template <class T>
void softmax_rows(T* p, int64_t Tq, int64_t Tk) {
  if constexpr (std::is_same_v<T, float> && detail::kAttentionRowsAvx512)
    return detail::softmax_rows_avx512(p, Tq, Tk);
  for (int64_t i = 0; i < Tq; ++i) softmax_row(p + i * Tk, Tk);
}

// dS = P * (dP - D_i) in place of dP, D_i = sum_j dP_ij P_ij in double.
template <class T>
void softmax_grad_rows(const T* p, T* ds, int64_t Tq, int64_t Tk) {
  if constexpr (std::is_same_v<T, float> && detail::kAttentionRowsAvx512)
    return detail::softmax_grad_rows_avx512(p, ds, Tq, Tk);
  for (int64_t i = 0; i < Tq; ++i) {
    const T* pi = p + i * Tk;
    T* di = ds + i * Tk;
    const double row_dot = vec::row_sum(Tk, [&](int64_t j) { return double(di[j]) * pi[j]; });
    for (int64_t j = 0; j < Tk; ++j) di[j] = pi[j] * (di[j] - T(row_dot));
  }
}

// Forward of one head: P (Tq, Tk) and O (Tq, D).
template <class T>
void attention_head_forward(HeadView<const T> q, HeadView<const T> k, HeadView<const T> v, T* p,
                            HeadView<T> o, const AttentionShape& s, double scale) {
  const int64_t Tq = s.Tq, Tk = s.Tk, D = s.D;
  gemm(false, true, Tq, Tk, D, scale, q.data, q.ld, k.data, k.ld, p, Tk);  // S = s Q K^T
  softmax_rows(p, Tq, Tk);                                                 // P
  gemm(false, false, Tq, D, Tk, 1.0, p, Tk, v.data, v.ld, o.data, o.ld);   // O = P V
}

// Backward of one head. dq, dk, dv may be null (not needed); ds is a (Tq, Tk) scratch.
//   dV = P^T dO;  dP = dO V^T;  D_i = sum_j dP_ij P_ij;  dS = P * (dP - D_i);
//   dQ = s dS K;  dK = s dS^T Q.
template <class T>
void attention_head_backward(HeadView<const T> q, HeadView<const T> k, HeadView<const T> v,
                             const T* p, HeadView<const T> dout, HeadView<T> dq, HeadView<T> dk,
                             HeadView<T> dv, T* ds, const AttentionShape& s, double scale) {
  const int64_t Tq = s.Tq, Tk = s.Tk, D = s.D;
  if (dv.data) gemm(true, false, Tk, D, Tq, 1.0, p, Tk, dout.data, dout.ld, dv.data, dv.ld);
  if (!dq.data && !dk.data) return;
  gemm(false, true, Tq, Tk, D, 1.0, dout.data, dout.ld, v.data, v.ld, ds, Tk);  // dP
  softmax_grad_rows(p, ds, Tq, Tk);                                             // dS
  if (dq.data) gemm(false, false, Tq, D, Tk, scale, ds, Tk, k.data, k.ld, dq.data, dq.ld);
  if (dk.data) gemm(true, false, Tk, D, Tq, scale, ds, Tk, q.data, q.ld, dk.data, dk.ld);
}

bool needs_grad(const Tensor& t) {
  return t.requires_grad() || t.grad_fn();
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  const AttentionShape s = check_attention(q, k, v);
  const double scale = 1.0 / std::sqrt(double(s.D));
  Shape p_shape = q.shape();
  p_shape[3] = s.Tk;
  // Saved for backward: P (B, H, Tq, Tk), so the backward needs neither Q K^T nor the
  // softmax again, and q, k, v themselves (detached).
  Tensor p = Tensor::empty(p_shape, q.dtype());
  Tensor out = Tensor::empty(q.shape(), q.dtype());
  if (s.D > 0 && s.Tq > 0) {
    dispatch(q.dtype(), [&](auto z) {
      using T = decltype(z);
      const T *qp = q.data<T>(), *kp = k.data<T>(), *vp = v.data<T>();
      T *pp = p.data<T>(), *op = out.data<T>();
      for_each_head(s, [&](int64_t h0, int64_t h1) {
        for (int64_t h = h0; h < h1; ++h)
          attention_head_forward<T>({qp + h * s.Tq * s.D, s.D}, {kp + h * s.Tk * s.D, s.D},
                                    {vp + h * s.Tk * s.D, s.D}, pp + h * s.Tq * s.Tk,
                                    {op + h * s.Tq * s.D, s.D}, s, scale);
      });
    });
  } else {
    std::fill_n(static_cast<char*>(out.raw_data()), out.numel() * dtype_size(out.dtype()), 0);
  }
  // Two products of 2*Tq*Tk*D each; the softmax (max, subtract, exp, sum, scale) 5*Tq*Tk.
  const double pairs = double(s.heads) * double(s.Tq) * double(s.Tk);
  add_flops(4.0 * pairs * double(s.D), true);
  add_flops(5.0 * pairs);
  if (!any_requires_grad({q, k, v}))
    return record("scaled_dot_product_attention", out, {q, k, v}, nullptr);
  const bool need_q = needs_grad(q), need_k = needs_grad(k), need_v = needs_grad(v);
  Tensor qs = q.detach(), ks = k.detach(), vs = v.detach();
  return record("scaled_dot_product_attention", out, {q, k, v}, [=](const Tensor& g) {
    const bool empty = s.D == 0 || s.Tq == 0;  // nothing flows: the gradients are zero
    auto grad_like = [&](bool need, const Tensor& t) {
      if (!need) return Tensor();
      return empty ? zeros(t.shape(), g.dtype()) : Tensor::empty(t.shape(), g.dtype());
    };
    Tensor dq = grad_like(need_q, qs), dk = grad_like(need_k, ks), dv = grad_like(need_v, vs);
    if (empty) return std::vector<Tensor>{dq, dk, dv};
    dispatch(g.dtype(), [&](auto z) {
      using T = decltype(z);
      const T *qp = qs.data<T>(), *kp = ks.data<T>(), *vp = vs.data<T>();
      const T *pp = p.data<T>(), *gp = g.data<T>();
      T* dqp = need_q ? dq.data<T>() : nullptr;
      T* dkp = need_k ? dk.data<T>() : nullptr;
      T* dvp = need_v ? dv.data<T>() : nullptr;
      for_each_head(s, [&](int64_t h0, int64_t h1) {
        std::vector<T> ds(s.Tq * s.Tk);  // dP, then dS, of one head
        for (int64_t h = h0; h < h1; ++h) {
          const int64_t qo = h * s.Tq * s.D, ko = h * s.Tk * s.D;
          attention_head_backward<T>(
              {qp + qo, s.D}, {kp + ko, s.D}, {vp + ko, s.D}, pp + h * s.Tq * s.Tk, {gp + qo, s.D},
              {dqp ? dqp + qo : nullptr, s.D}, {dkp ? dkp + ko : nullptr, s.D},
              {dvp ? dvp + ko : nullptr, s.D}, ds.data(), s, scale);
        }
      });
    });
    return std::vector<Tensor>{dq, dk, dv};
  });
}

}  // namespace vg

namespace vg {

// The same attention read from the packed projection: head h of sample b has its q, k, v at
// columns [h*D, (h+1)*D) of the three C-wide thirds of qkv's rows, and writes its output at
// the same columns of out's rows. gemm's row strides do the (de)interleaving, so no q, k, v
// or output copy is ever made, and the backward writes d(qkv) directly.
Tensor qkv_attention(const Tensor& qkv, int64_t num_heads) {
  check(qkv.defined(), "qkv_attention: undefined input");
  check(qkv.dim() == 3 && num_heads > 0 && qkv.size(2) % (3 * num_heads) == 0,
        "qkv_attention: qkv must be (B, T, 3 * heads * D) with ", num_heads, " heads, got ",
        shape_str(qkv.shape()));
  check(qkv.size(1) > 0, "qkv_attention: no tokens to attend to, shape ", shape_str(qkv.shape()));
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, H = num_heads;
  const AttentionShape s{B * H, T, T, C / H};
  const double scale = 1.0 / std::sqrt(double(s.D));
  const int64_t ld = 3 * C;
  Tensor p = Tensor::empty({B, H, T, T}, qkv.dtype());
  Tensor out = Tensor::empty({B, T, C}, qkv.dtype());
  // Head task bh = b * H + h: its q, its output, its P.
  auto q_at = [=](int64_t bh) { return (bh / H) * T * ld + (bh % H) * s.D; };
  auto o_at = [=](int64_t bh) { return (bh / H) * T * C + (bh % H) * s.D; };
  if (s.D > 0) {
    dispatch(qkv.dtype(), [&](auto z) {
      using T_ = decltype(z);
      const T_* x = qkv.data<T_>();
      T_ *pp = p.data<T_>(), *op = out.data<T_>();
      for_each_head(s, [&](int64_t h0, int64_t h1) {
        for (int64_t h = h0; h < h1; ++h) {
          const T_* q = x + q_at(h);
          if (h + 1 < h1)
            for (int part = 0; part < 3; ++part)
              prefetch_rows(x + q_at(h + 1) + part * C, ld, T, s.D);
          attention_head_forward<T_>({q, ld}, {q + C, ld}, {q + 2 * C, ld}, pp + h * T * T,
                                     {op + o_at(h), C}, s, scale);
        }
      });
    });
  }
  const double pairs = double(s.heads) * double(T) * double(T);
  add_flops(4.0 * pairs * double(s.D), true);
  add_flops(5.0 * pairs);
  if (!any_requires_grad({qkv})) return record("qkv_attention", out, {qkv}, nullptr);
  Tensor xs = qkv.detach();
  return record("qkv_attention", out, {qkv}, [=](const Tensor& g) {
    Tensor dx = Tensor::empty(xs.shape(), g.dtype());
    if (s.D == 0) return std::vector<Tensor>{dx};
    dispatch(g.dtype(), [&](auto z) {
      using T_ = decltype(z);
      const T_ *x = xs.data<T_>(), *pp = p.data<T_>(), *gp = g.data<T_>();
      T_* d = dx.data<T_>();
      for_each_head(s, [&](int64_t h0, int64_t h1) {
        std::vector<T_> ds(T * T);  // dP, then dS, of one head
        for (int64_t h = h0; h < h1; ++h) {
          const T_* q = x + q_at(h);
          T_* dq = d + q_at(h);
          if (h + 1 < h1) {
            for (int part = 0; part < 3; ++part)
              prefetch_rows(x + q_at(h + 1) + part * C, ld, T, s.D);
            prefetch_rows(gp + o_at(h + 1), C, T, s.D);
            prefetch_rows(pp + (h + 1) * T * T, T, T, T);
          }
          attention_head_backward<T_>({q, ld}, {q + C, ld}, {q + 2 * C, ld}, pp + h * T * T,
                                      {gp + o_at(h), C}, {dq, ld}, {dq + C, ld}, {dq + 2 * C, ld},
                                      ds.data(), s, scale);
        }
      });
    });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace vg
