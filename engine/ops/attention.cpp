// Scaled dot-product attention, fused per (batch, head): S = s Q K^T, P = softmax_rows(S),
// O = P V with s = D^-0.5. The (batch, head) pairs are independent, so they run in
// parallel, one head per task; one head's products and softmax rows are
// kernels/attention_head.h.
//
// Threads: heads run in parallel, one task per range of heads, and each head runs on its
// task's thread, so the bits do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/kernels/attention_head.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

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
        "scaled_dot_product_attention: q, k and v must be (B, H, T, D) ", shapes);
  for (int axis : {0, 1, 3}) {
    check(k.size(axis) == q.size(axis) && v.size(axis) == q.size(axis),
          "scaled_dot_product_attention: q, k and v differ in ",
          axis == 0   ? "batch size B"
          : axis == 1 ? "head count H"
                      : "head dim D",
          " ", shapes);
  }
  check(k.size(2) == v.size(2), "scaled_dot_product_attention: k has ", k.size(2),
        " tokens and v has ", v.size(2), " ", shapes);
  check(k.size(2) > 0, "scaled_dot_product_attention: no keys to attend to ", shapes);
  check(k.dtype() == q.dtype() && v.dtype() == q.dtype(),
        "scaled_dot_product_attention: q, k and v are ", dtype_name(q.dtype()), ", ",
        dtype_name(k.dtype()), " and ", dtype_name(v.dtype()), " ", shapes);
  return AttentionShape{q.size(0) * q.size(1), q.size(2), k.size(2), q.size(3)};
}

// Runs body(h0, h1) over ranges of heads in parallel; inside a task each product runs on
// the calling thread (engine/kernels/blas.h), so a head is always the same sequence of calls.
template <class F>
void for_each_head(const AttentionShape& s, F&& body) {
  const int64_t work = s.Tq * s.Tk * std::max<int64_t>(s.D, 1);
  parallel_for(s.heads, std::max<int64_t>(1, 32768 / std::max<int64_t>(work, 1)), body);
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
          kernels::attention_head_forward<T>({qp + h * s.Tq * s.D, s.D}, {kp + h * s.Tk * s.D, s.D},
                                             {vp + h * s.Tk * s.D, s.D}, pp + h * s.Tq * s.Tk,
                                             {op + h * s.Tq * s.D, s.D}, s.Tq, s.Tk, s.D, scale);
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
          kernels::attention_head_backward<T>(
              {qp + qo, s.D}, {kp + ko, s.D}, {vp + ko, s.D}, pp + h * s.Tq * s.Tk, {gp + qo, s.D},
              {dqp ? dqp + qo : nullptr, s.D}, {dkp ? dkp + ko : nullptr, s.D},
              {dvp ? dvp + ko : nullptr, s.D}, ds.data(), s.Tq, s.Tk, s.D, scale);
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
        qkv.shape());
  check(qkv.size(1) > 0, "qkv_attention: no tokens to attend to, shape ", qkv.shape());
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
              kernels::prefetch_rows(x + q_at(h + 1) + part * C, ld, T, s.D);
          kernels::attention_head_forward<T_>({q, ld}, {q + C, ld}, {q + 2 * C, ld}, pp + h * T * T,
                                              {op + o_at(h), C}, s.Tq, s.Tk, s.D, scale);
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
              kernels::prefetch_rows(x + q_at(h + 1) + part * C, ld, T, s.D);
            kernels::prefetch_rows(gp + o_at(h + 1), C, T, s.D);
            kernels::prefetch_rows(pp + (h + 1) * T * T, T, T, T);
          }
          kernels::attention_head_backward<T_>(
              {q, ld}, {q + C, ld}, {q + 2 * C, ld}, pp + h * T * T, {gp + o_at(h), C}, {dq, ld},
              {dq + C, ld}, {dq + 2 * C, ld}, ds.data(), s.Tq, s.Tk, s.D, scale);
        }
      });
    });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace vg
