// Fused ops of the normalisation and residual-scaling layers: channel_affine (LayerScale,
// LearnableScaler) and global_response_norm (GRN). Both reduce over every leading
// (non-channel) axis in backward; their kernels (kernels/channel_affine_rows.h,
// kernels/global_response_norm.h) sum in an order fixed by the shape, so the gradients have
// the same bits at any thread count.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/kernels/channel_affine_rows.h"
#include "engine/kernels/gelu_math.h"
#include "engine/kernels/global_response_norm.h"
#include "engine/ops/norm_parts.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

bool needs_grad(const Tensor& t) {
  return t.defined() && (t.requires_grad() || t.grad_fn());
}

// A per-channel operand (scale, shift, gamma, beta) must be exactly (C) and of x's dtype.
void check_channel_param(const char* op, const char* what, const Tensor& p, const Tensor& x) {
  const int64_t C = x.size(-1);
  check(p.dim() == 1 && p.size(0) == C, op, ": ", what, " has shape ", p.shape(), ", expected [", C,
        "] for input shape ", x.shape());
  check(p.dtype() == x.dtype(), op, ": ", what, " is ", dtype_name(p.dtype()), " but the input is ",
        dtype_name(x.dtype()), "; convert one with .to()");
}

}  // namespace

// --- channel_affine: y = x * scale + shift over the last axis -----------------------------
// Saved for backward: x (only when scale needs a gradient: dscale = sum dy * x) and scale
// (dx = dy * scale). dshift = sum dy needs nothing.
namespace detail {

Tensor channel_affine_values(const Tensor& x, const Tensor& scale, const Tensor& shift) {
  check(x.defined() && scale.defined(), "channel_affine: undefined input or scale");
  check(x.dim() >= 1, "channel_affine: input must have a channel axis, got shape ", x.shape());
  check_channel_param("channel_affine", "scale", scale, x);
  const bool has_shift = shift.defined();
  if (has_shift) check_channel_param("channel_affine", "shift", shift, x);
  const int64_t C = x.size(-1), rows = C > 0 ? x.numel() / C : 0;

  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::channel_affine_rows(x.data<T>(), scale.data<T>(),
                                 has_shift ? shift.data<T>() : nullptr, out.data<T>(), rows, C);
  });
  add_flops(double(x.numel()) * (has_shift ? 2 : 1));
  return out;
}

// dx = dy * scale, dscale = sum_rows dy * x, dshift = sum_rows dy; xs is read only when
// need_scale.
std::vector<Tensor> channel_affine_grads(const Tensor& xs, const Tensor& ss, const Tensor& g,
                                         bool need_x, bool need_scale, bool need_shift,
                                         const Tensor& received) {
  const int64_t C = g.size(-1), rows = C > 0 ? g.numel() / C : 0;
  const bool adds = need_x && received.defined();
  Tensor gx = adds ? received : need_x ? Tensor::empty(g.shape(), g.dtype()) : Tensor();
  Tensor gscale = need_scale ? Tensor::empty({C}, g.dtype()) : Tensor();
  Tensor gshift = need_shift ? Tensor::empty({C}, g.dtype()) : Tensor();
  dispatch(g.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::channel_affine_backward_rows(g.data<T>(), need_scale ? xs.data<T>() : nullptr,
                                          ss.data<T>(), need_x ? gx.data<T>() : nullptr,
                                          need_scale ? gscale.data<T>() : nullptr,
                                          need_shift ? gshift.data<T>() : nullptr, rows, C,
                                          adds);
  });
  return std::vector<Tensor>{gx, gscale, gshift};
}

}  // namespace detail

Tensor channel_affine(const Tensor& x, const Tensor& scale, const Tensor& shift) {
  Tensor out = detail::channel_affine_values(x, scale, shift);
  if (!any_requires_grad({x, scale, shift}))
    return record("channel_affine", out, {x, scale, shift}, nullptr);
  const bool need_x = needs_grad(x), need_scale = needs_grad(scale), need_shift = needs_grad(shift);
  const Tensor xs = need_scale ? x.detach() : Tensor(), ss = scale.detach();
  return record("channel_affine", out, {x, scale, shift}, [=](const Tensor& g) {
    // x's gradient from a residual, if it came first, gets dx added in the same pass.
    const Tensor received = need_x ? take_received_grad(0, g.shape(), g.dtype()) : Tensor();
    return detail::channel_affine_grads(xs, ss, g, need_x, need_scale, need_shift, received);
  });
}

// --- global_response_norm (semantics.md 2.1 and 6.7) --------------------------------------
// x is viewed as (B, S, C), S the product of the spatial axes. Per sample b and channel c:
//   g = sqrt(sum_s x^2),  mu = mean_c g,  n = g / (mu + eps),  y = gamma*(x*n) + beta + x.
// Saved for backward: x, gamma, and per (b, c) the norm g and n, per b the divisor mu + eps
// (in double: B*C values, tiny next to x).
namespace detail {

namespace {

// x seen as (B, S, C), S the product of the spatial axes.
struct GrnDims {
  int64_t B, S, C;
};

// x's dims, once x, gamma and beta are checked.
GrnDims grn_dims(const Tensor& x, const Tensor& gamma, const Tensor& beta) {
  check(x.defined() && gamma.defined() && beta.defined(),
        "global_response_norm: undefined input, gamma or beta");
  check(x.dim() >= 3,
        "global_response_norm: input must be (B, spatial..., C) with at least "
        "one spatial axis, got shape ",
        x.shape());
  check_channel_param("global_response_norm", "gamma", gamma, x);
  check_channel_param("global_response_norm", "beta", beta, x);
  const int64_t B = x.size(0), C = x.size(-1);
  return GrnDims{B, B * C > 0 ? x.numel() / (B * C) : 0, C};
}

}  // namespace

Tensor grn_values(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                  std::vector<double>& stats) {
  const GrnDims d = grn_dims(x, gamma, beta);
  const int64_t B = d.B, S = d.S, C = d.C;
  stats.assign(B * (2 * C + 1), 0.0);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::global_response_norm_samples(x.data<T>(), gamma.data<T>(), beta.data<T>(), eps,
                                          out.data<T>(), stats.data(), B, S, C);
  });
  add_flops(6.0 * double(x.numel()));
  return out;
}

Tensor gelu_grn_values(const Tensor& h, bool tanh_form, const Tensor& gamma, const Tensor& beta,
                       double eps, std::vector<double>& stats, Tensor* act, Tensor* slope,
                       Bf16Rows* rounded) {
  const GrnDims d = grn_dims(h, gamma, beta);
  const int64_t B = d.B, S = d.S, C = d.C;
  stats.assign(B * (2 * C + 1), 0.0);
  if (act) *act = Tensor::empty(h.shape(), h.dtype());
  if (slope) *slope = Tensor::empty(h.shape(), h.dtype());
  Tensor out;
  if (rounded) {
    check(h.dtype() == DType::f32, "gelu_grn: a bf16 output asked for of ", dtype_name(h.dtype()));
    *rounded = make_bf16_rows(B * S, C);
    kernels::gelu_grn_samples_bf16(h.data<float>(), tanh_form, gamma.data<float>(),
                                   beta.data<float>(), eps, act ? act->data<float>() : nullptr,
                                   slope ? slope->data<float>() : nullptr, rounded->words(),
                                   stats.data(), B, S, C);
  } else {
    out = Tensor::empty(h.shape(), h.dtype());
    dispatch(h.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::gelu_grn_samples(h.data<T>(), tanh_form, gamma.data<T>(), beta.data<T>(), eps,
                                act ? act->data<T>() : nullptr, slope ? slope->data<T>() : nullptr,
                                out.data<T>(), stats.data(), B, S, C);
    });
  }
  const double gelu_flops = tanh_form ? gelu_math::kTanhFlops : gelu_math::kErfFlops;
  add_flops((gelu_flops + 6.0) * double(h.numel()));
  return out;
}

std::vector<Tensor> gelu_grn_values_and_grads(const Tensor& h, bool tanh_form, const Tensor& gamma,
                                              const Tensor& beta, double eps, const Tensor& g,
                                              const std::vector<bool>& need, Tensor& a,
                                              Bf16Rows* rounded) {
  const GrnDims d = grn_dims(h, gamma, beta);
  const int64_t B = d.B, S = d.S, C = d.C;
  Tensor dh = g;  // in g's memory
  Tensor dgamma = need[1] ? Tensor::empty({C}, g.dtype()) : Tensor();
  Tensor dbeta = need[2] ? Tensor::empty({C}, g.dtype()) : Tensor();
  if (rounded) {
    check(h.dtype() == DType::f32, "gelu_grn: a bf16 output asked for of ", dtype_name(h.dtype()));
    *rounded = make_bf16_rows(B * S, C, /*row_pairs=*/S % 2 == 0);
    kernels::gelu_grn_backward_samples_bf16(
        h.data<float>(), tanh_form, gamma.data<float>(), beta.data<float>(), eps,
        rounded->words(), rounded->row_pairs, dh.data<float>(), need[0],
        need[1] ? dgamma.data<float>() : nullptr, need[2] ? dbeta.data<float>() : nullptr, B, S,
        C);
  } else {
    a = Tensor::empty(h.shape(), h.dtype());
    dispatch(h.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::gelu_grn_backward_samples(h.data<T>(), tanh_form, gamma.data<T>(), beta.data<T>(),
                                         eps, a.data<T>(), dh.data<T>(), need[0],
                                         need[1] ? dgamma.data<T>() : nullptr,
                                         need[2] ? dbeta.data<T>() : nullptr, B, S, C);
    });
  }
  const double gelu_flops = tanh_form ? gelu_math::kTanhFlops : gelu_math::kErfFlops;
  add_flops((gelu_flops + 6.0) * double(h.numel()));
  return std::vector<Tensor>{need[0] ? dh : Tensor(), dgamma, dbeta};
}

// With P_bc = sum_s G x and a_c = gamma_c P_bc:
//   dL/dg_k = (a_k - mean_c(a_c n_c)) / (mu + eps),
//   dx_sc = G_sc (1 + gamma_c n_c) + x_sc * dL/dg_c / g_c   (0 where g_c == 0),
//   dgamma_c = sum_b n_bc P_bc,   dbeta_c = sum_{b,s} G.
std::vector<Tensor> grn_grads(const Tensor& xs, const Tensor& gs, const std::vector<double>& stats,
                              const Tensor& G, bool need_x, bool need_gamma, bool need_beta,
                              const Tensor& dx_scale) {
  const int64_t B = xs.size(0), C = xs.size(-1);
  const int64_t S = B * C > 0 ? xs.numel() / (B * C) : 0;
  Tensor gx = need_x ? Tensor::empty(G.shape(), G.dtype()) : Tensor();
  Tensor ggamma = need_gamma ? Tensor::empty({C}, G.dtype()) : Tensor();
  Tensor gbeta = need_beta ? Tensor::empty({C}, G.dtype()) : Tensor();
  dispatch(G.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::global_response_norm_backward_samples(
        G.data<T>(), xs.data<T>(), gs.data<T>(), stats.data(), need_x ? gx.data<T>() : nullptr,
        need_gamma ? ggamma.data<T>() : nullptr, need_beta ? gbeta.data<T>() : nullptr, B, S, C,
        dx_scale.defined() ? dx_scale.data<T>() : nullptr);
  });
  return std::vector<Tensor>{gx, ggamma, gbeta};
}

}  // namespace detail

Tensor global_response_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  auto stats = std::make_shared<std::vector<double>>();
  Tensor out = detail::grn_values(x, gamma, beta, eps, *stats);
  if (!any_requires_grad({x, gamma, beta}))
    return record("global_response_norm", out, {x, gamma, beta}, nullptr);
  const bool need_x = needs_grad(x), need_gamma = needs_grad(gamma), need_beta = needs_grad(beta);
  const Tensor xs = x.detach(), gs = gamma.detach();
  return record("global_response_norm", out, {x, gamma, beta}, [=](const Tensor& G) {
    return detail::grn_grads(xs, gs, *stats, G, need_x, need_gamma, need_beta);
  });
}

}  // namespace vg
