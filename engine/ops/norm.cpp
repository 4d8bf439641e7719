// Fused ops of the normalisation and residual-scaling layers: channel_affine (LayerScale,
// LearnableScaler) and global_response_norm (GRN). Both reduce over every leading
// (non-channel) axis in backward; the partial sums live in fixed blocks that are combined in
// a fixed order, so the gradients have the same bits at any thread count.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
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
  check(p.dim() == 1 && p.size(0) == C, op, ": ", what, " has shape ", shape_str(p.shape()),
        ", expected [", C, "] for input shape ", shape_str(x.shape()));
  check(p.dtype() == x.dtype(), op, ": ", what, " is ", dtype_name(p.dtype()), " but the input is ",
        dtype_name(x.dtype()), "; convert one with .to()");
}

// Rows per block of the backward's partial sums: a function of the row count only (never of
// the thread count), at least 64, and at most about 256 blocks.
int64_t row_block(int64_t rows) {
  return std::max<int64_t>(64, (rows + 255) / 256);
}

// Work items per thread so that each thread gets about 32k elements: small tensors stay on
// the calling thread.
int64_t grain_for(int64_t elements_per_item) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, elements_per_item));
}

}  // namespace

// --- channel_affine: y = x * scale + shift over the last axis -----------------------------
// Saved for backward: x (only when scale needs a gradient: dscale = sum dy * x) and scale
// (dx = dy * scale). dshift = sum dy needs nothing.
namespace detail {

Tensor channel_affine_values(const Tensor& x, const Tensor& scale, const Tensor& shift) {
  check(x.defined() && scale.defined(), "channel_affine: undefined input or scale");
  check(x.dim() >= 1, "channel_affine: input must have a channel axis, got shape ",
        shape_str(x.shape()));
  check_channel_param("channel_affine", "scale", scale, x);
  const bool has_shift = shift.defined();
  if (has_shift) check_channel_param("channel_affine", "shift", shift, x);
  const int64_t C = x.size(-1), rows = C > 0 ? x.numel() / C : 0;

  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    const T *px = x.data<T>(), *ps = scale.data<T>();
    const T* pb = has_shift ? shift.data<T>() : nullptr;
    T* py = out.data<T>();
    parallel_for(rows, grain_for(C), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = px + r * C;
        T* yr = py + r * C;
        if (pb)
          for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * ps[c] + pb[c];
        else
          for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * ps[c];
      }
    });
  });
  add_flops(double(x.numel()) * (has_shift ? 2 : 1));
  return out;
}

// xs is read only when need_scale.
std::vector<Tensor> channel_affine_grads(const Tensor& xs, const Tensor& ss, const Tensor& g,
                                         bool need_x, bool need_scale, bool need_shift) {
  const int64_t C = g.size(-1), rows = C > 0 ? g.numel() / C : 0;
  Tensor gx = need_x ? Tensor::empty(g.shape(), g.dtype()) : Tensor();
  Tensor gscale = need_scale ? Tensor::empty({C}, g.dtype()) : Tensor();
  Tensor gshift = need_shift ? Tensor::empty({C}, g.dtype()) : Tensor();
  const int64_t block = row_block(rows), blocks = (rows + block - 1) / block;
  // Per row block, double partial sums of dy * x and dy for every channel.
  std::vector<double> part_scale(need_scale ? blocks * C : 0);
  std::vector<double> part_shift(need_shift ? blocks * C : 0);
  dispatch(g.dtype(), [&](auto z) {
    using T = decltype(z);
    const T *pg = g.data<T>(), *ps = ss.data<T>();
    const T* px = need_scale ? xs.data<T>() : nullptr;
    T* pgx = need_x ? gx.data<T>() : nullptr;
    parallel_for(blocks, grain_for(block * C), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double* acc_s = need_scale ? part_scale.data() + b * C : nullptr;
        double* acc_b = need_shift ? part_shift.data() + b * C : nullptr;
        for (int64_t r = b * block, r1 = std::min(rows, (b + 1) * block); r < r1; ++r) {
          const T* gr = pg + r * C;
          if (pgx)
            for (int64_t c = 0; c < C; ++c) pgx[r * C + c] = gr[c] * ps[c];
          if (acc_s) {
            const T* xr = px + r * C;
            for (int64_t c = 0; c < C; ++c) acc_s[c] += double(gr[c]) * double(xr[c]);
          }
          if (acc_b)
            for (int64_t c = 0; c < C; ++c) acc_b[c] += double(gr[c]);
        }
      }
    });
    // Combine the blocks in order, one channel per task.
    auto combine = [&](const std::vector<double>& part, Tensor& dst) {
      T* pd = dst.data<T>();
      parallel_for(C, grain_for(blocks), [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          double s = 0;
          for (int64_t b = 0; b < blocks; ++b) s += part[b * C + c];
          pd[c] = static_cast<T>(s);
        }
      });
    };
    if (need_scale) combine(part_scale, gscale);
    if (need_shift) combine(part_shift, gshift);
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
    return detail::channel_affine_grads(xs, ss, g, need_x, need_scale, need_shift);
  });
}

// --- global_response_norm (semantics.md 2.1 and 6.7) --------------------------------------
// x is viewed as (B, S, C), S the product of the spatial axes. Per sample b and channel c:
//   g = sqrt(sum_s x^2),  mu = mean_c g,  n = g / (mu + eps),  y = gamma*(x*n) + beta + x.
// Saved for backward: x, gamma, and per (b, c) the norm g and n, per b the divisor mu + eps
// (in double: B*C values, tiny next to x).
namespace detail {

Tensor grn_values(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                  std::vector<double>& stats) {
  check(x.defined() && gamma.defined() && beta.defined(),
        "global_response_norm: undefined input, gamma or beta");
  check(x.dim() >= 3,
        "global_response_norm: input must be (B, spatial..., C) with at least "
        "one spatial axis, got shape ",
        shape_str(x.shape()));
  check_channel_param("global_response_norm", "gamma", gamma, x);
  check_channel_param("global_response_norm", "beta", beta, x);
  const int64_t B = x.size(0), C = x.size(-1);
  const int64_t S = B * C > 0 ? x.numel() / (B * C) : 0;

  stats.assign(B * (2 * C + 1), 0.0);
  double *norm = stats.data(), *n = norm + B * C, *divisor = n + B * C;
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    const T *px = x.data<T>(), *pgam = gamma.data<T>(), *pbet = beta.data<T>();
    T* py = out.data<T>();
    // One sample at a time: its S x C values (a few hundred KB at most in a ViT) are read
    // from memory once for the sums of squares and again from L2 for the output.
    parallel_for(B, grain_for(S * C), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double *acc = norm + b * C, *nb = n + b * C;
        for (int64_t s = 0; s < S; ++s) {  // sums of squares over s in order
          const T* xr = px + (b * S + s) * C;
          for (int64_t c = 0; c < C; ++c) acc[c] += double(xr[c]) * double(xr[c]);
        }
        double mu = 0;
        for (int64_t c = 0; c < C; ++c) {
          acc[c] = std::sqrt(acc[c]);
          mu += acc[c];
        }
        divisor[b] = mu / double(C) + eps;
        for (int64_t c = 0; c < C; ++c) nb[c] = acc[c] / divisor[b];
        // The output in the order of the reference: x + (beta + gamma * (x * n)).
        for (int64_t s = 0; s < S; ++s) {
          const T* xr = px + (b * S + s) * C;
          T* yr = py + (b * S + s) * C;
          for (int64_t c = 0; c < C; ++c)
            yr[c] = xr[c] + (pbet[c] + pgam[c] * (xr[c] * static_cast<T>(nb[c])));
        }
      }
    });
  });
  add_flops(6.0 * double(x.numel()));
  return out;
}

std::vector<Tensor> grn_grads(const Tensor& xs, const Tensor& gs, const std::vector<double>& stats,
                              const Tensor& G, bool need_x, bool need_gamma, bool need_beta) {
  const int64_t B = xs.size(0), C = xs.size(-1);
  const int64_t S = B * C > 0 ? xs.numel() / (B * C) : 0;
  const double *norm = stats.data(), *n = norm + B * C, *divisor = n + B * C;
  // Per (b, c): P = sum_s G*x (so dL/dn_c = gamma_c * P) and Q = sum_s G.
  std::vector<double> P(B * C, 0.0), Q(B * C, 0.0);
  Tensor gx = need_x ? Tensor::empty(G.shape(), G.dtype()) : Tensor();
  Tensor ggamma = need_gamma ? Tensor::empty({C}, G.dtype()) : Tensor();
  Tensor gbeta = need_beta ? Tensor::empty({C}, G.dtype()) : Tensor();
  dispatch(G.dtype(), [&](auto z) {
    using T = decltype(z);
    const T *pG = G.data<T>(), *px = xs.data<T>(), *pgam = gs.data<T>();
    T* pgx = need_x ? gx.data<T>() : nullptr;
    // One sample at a time, as in the forward: its G and x are read from memory once for the
    // sums and again from L2 for dx.
    parallel_for(B, grain_for(S * C), [&](int64_t b0, int64_t b1) {
      std::vector<double> direct(C), through_norm(C);
      for (int64_t b = b0; b < b1; ++b) {
        double *Pb = P.data() + b * C, *Qb = Q.data() + b * C;
        for (int64_t s = 0; s < S; ++s) {
          const T *gr = pG + (b * S + s) * C, *xr = px + (b * S + s) * C;
          for (int64_t c = 0; c < C; ++c) {
            Pb[c] += double(gr[c]) * double(xr[c]);
            Qb[c] += double(gr[c]);
          }
        }
        if (!pgx) continue;
        // dx_sc = G_sc (1 + gamma_c n_c) + x_sc * (dL/dg_c / g_c), with
        // dL/dg_k = (a_k - mean_c(a_c n_c)) / (mu + eps), a_c = gamma_c P_c, and the x/g
        // factor taken as 0 where g_c == 0 (PyTorch's masked norm backward).
        const double* nb = n + b * C;
        double an = 0;
        for (int64_t c = 0; c < C; ++c) an += double(pgam[c]) * Pb[c] * nb[c];
        an /= double(C);
        for (int64_t c = 0; c < C; ++c) {
          const double dL_dg = (double(pgam[c]) * Pb[c] - an) / divisor[b];
          const double g = norm[b * C + c];
          direct[c] = 1.0 + double(pgam[c]) * nb[c];
          through_norm[c] = g > 0 ? dL_dg / g : 0.0;
        }
        for (int64_t s = 0; s < S; ++s) {
          const T *gr = pG + (b * S + s) * C, *xr = px + (b * S + s) * C;
          T* dr = pgx + (b * S + s) * C;
          for (int64_t c = 0; c < C; ++c)
            dr[c] = static_cast<T>(double(gr[c]) * direct[c] + double(xr[c]) * through_norm[c]);
        }
      }
    });
    // d beta_c = sum_{b,s} G;  d gamma_c = sum_{b,s} G*x*n_c = sum_b n_bc P_bc.
    for (int64_t c = 0; c < C; ++c) {
      double db = 0, dg = 0;
      for (int64_t b = 0; b < B; ++b) {
        db += Q[b * C + c];
        dg += n[b * C + c] * P[b * C + c];
      }
      if (need_beta) gbeta.data<T>()[c] = static_cast<T>(db);
      if (need_gamma) ggamma.data<T>()[c] = static_cast<T>(dg);
    }
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
