// Fused neural-network ops over the last (channel) axis: softmax, log_softmax, layer_norm,
// cross_entropy and dropout. Each kernel makes one pass over a row (plus the passes a
// max-subtraction or a two-pass variance needs), rows run in parallel, and every sum is
// accumulated in double in a fixed order, so the bits do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/kernels/row_sum.h"
#include "engine/kernels/vec_math.h"
#include "engine/ops/norm_parts.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

// A tensor seen as `rows` rows of `C` elements (its last axis).
struct Rows {
  int64_t rows = 0, C = 0;
};

Rows rows_of(const char* op, const Tensor& x) {
  check(x.defined(), op, ": undefined input");
  check(x.dim() >= 1, op, ": input needs at least one axis, got shape ", shape_str(x.shape()));
  Rows r;
  r.C = x.size(-1);
  r.rows = r.C > 0 ? x.numel() / r.C : 0;
  return r;
}

// Rows per thread chunk: about 16k elements, so small inputs stay on one thread.
int64_t row_grain(int64_t C) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1));
}

bool needs_grad(const Tensor& t) {
  return t.defined() && (t.requires_grad() || t.grad_fn());
}

// y = exp(x - max) / sum, or with `log` y = x - max - log(sum); sums in double. The exps go
// to y first, in a loop of their own, so that both it and the sum vectorise.
template <class T>
void softmax_rows(const T* x, T* y, Rows r, bool log) {
  const int64_t C = r.C;
  parallel_for(r.rows, row_grain(C), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const T* xi = x + i * C;
      T* yi = y + i * C;
      const T m = vec::row_max(xi, C);
      for (int64_t c = 0; c < C; ++c) yi[c] = vec::exp_of(T(xi[c] - m));
      const double s = vec::row_sum(C, [&](int64_t c) { return yi[c]; });
      if (log) {
        const double lse = m + std::log(s);
        for (int64_t c = 0; c < C; ++c) yi[c] = T(xi[c] - lse);
      } else {
        const T inv = T(1.0 / s);
        for (int64_t c = 0; c < C; ++c) yi[c] *= inv;
      }
    }
  });
}

// softmax:     dx = y * (dy - sum(dy * y))
// log_softmax: dx = dy - exp(y) * sum(dy)
template <class T>
void softmax_backward_rows(const T* y, const T* dy, T* dx, Rows r, bool log) {
  const int64_t C = r.C;
  parallel_for(r.rows, row_grain(C), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const T *yi = y + i * C, *dyi = dy + i * C;
      T* dxi = dx + i * C;
      if (log) {
        const T s = T(vec::row_sum(C, [&](int64_t c) { return dyi[c]; }));
        for (int64_t c = 0; c < C; ++c) dxi[c] = dyi[c] - vec::exp_of(yi[c]) * s;
      } else {
        const T s = T(vec::row_sum(C, [&](int64_t c) { return double(dyi[c]) * yi[c]; }));
        for (int64_t c = 0; c < C; ++c) dxi[c] = yi[c] * (dyi[c] - s);
      }
    }
  });
}

// Both softmaxes save their output (not the input): the backward needs only y.
Tensor softmax_op(const char* op, const Tensor& a, bool log) {
  const Rows r = rows_of(op, a);
  Tensor y = Tensor::empty(a.shape(), a.dtype());
  if (r.C > 0) {
    dispatch(a.dtype(), [&](auto z) {
      using T = decltype(z);
      softmax_rows(a.data<T>(), y.data<T>(), r, log);
    });
  }
  add_flops(5.0 * double(a.numel()));  // max, subtract, exp, sum, scale
  if (!any_requires_grad({a})) return record(op, y, {a}, nullptr);
  Tensor ys = y.detach();
  return record(op, y, {a}, [ys, r, log](const Tensor& g) {
    Tensor dx = Tensor::empty(g.shape(), g.dtype());
    dispatch(g.dtype(), [&](auto z) {
      using T = decltype(z);
      softmax_backward_rows(ys.data<T>(), g.data<T>(), dx.data<T>(), r, log);
    });
    return std::vector<Tensor>{dx};
  });
}

// --- layer_norm ------------------------------------------------------------------------

// Calls body(weight) with weight(c) = w[c], or = 1.0 when there is no weight: the test is
// made once, not per element, and 1.0 folds away, so each loop is branch-free and vectorises.
template <class T, class Body>
void with_weight(const T* w, Body body) {
  if (w) {
    body([w](int64_t c) { return double(w[c]); });
  } else {
    body([](int64_t) { return 1.0; });
  }
}

// y = (x - mean) * rstd * w + b per row; stats holds (mean, rstd) per row.
template <class T>
void layer_norm_forward(const T* x, const T* w, const T* b, double eps, T* y, double* stats,
                        Rows r) {
  const int64_t C = r.C;
  parallel_for(r.rows, row_grain(C), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const T* xi = x + i * C;
      T* yi = y + i * C;
      const double mean = vec::row_sum(C, [&](int64_t c) { return xi[c]; }) / double(C);
      const double var = vec::row_sum(C, [&](int64_t c) {
        const double d = xi[c] - mean;
        return d * d;
      });
      const double rstd = 1.0 / std::sqrt(var / double(C) + eps);
      with_weight(w, [&](auto weight) {
        if (b) {
          for (int64_t c = 0; c < C; ++c)
            yi[c] = T((xi[c] - mean) * rstd * weight(c) + double(b[c]));
        } else {
          for (int64_t c = 0; c < C; ++c) yi[c] = T((xi[c] - mean) * rstd * weight(c));
        }
      });
      stats[2 * i] = mean;
      stats[2 * i + 1] = rstd;
    }
  });
}

// The weight and bias gradients are sums over all rows. The rows are cut into a fixed number
// of blocks (never depending on the thread count), each block sums its rows in order, and
// the block sums are added in block order: the same bits at any thread count.
constexpr int64_t kLayerNormBlocks = 32;

// g = dy * w; dx = rstd * (g - mean(g) - xhat * mean(g * xhat));
// dw = sum_rows dy * xhat; db = sum_rows dy. dx, dw, db may each be null (not needed).
template <class T>
void layer_norm_backward(const T* x, const T* w, const double* stats, const T* dy, T* dx, T* dw,
                         T* db, Rows r) {
  const int64_t C = r.C, blocks = std::min(kLayerNormBlocks, r.rows);
  const bool params = dw || db;
  std::vector<double> partial(params ? blocks * 2 * C : 0, 0.0);  // per block: dw, db
  const int64_t rows_per_block = std::max<int64_t>(1, r.rows / std::max<int64_t>(blocks, 1));
  // xhat and g of the current row, in double, computed once: converting x and dy and
  // recomputing them in each of the three passes cost more than reading them back from L1.
  auto block_rows = [&](int64_t blk, auto weight, double* xhat, double* g) {
    double* pw = params ? partial.data() + blk * 2 * C : nullptr;
    double* pb = params ? pw + C : nullptr;
    for (int64_t i = r.rows * blk / blocks; i < r.rows * (blk + 1) / blocks; ++i) {
      const T *xi = x + i * C, *dyi = dy + i * C;
      const double mean = stats[2 * i], rstd = stats[2 * i + 1];
      for (int64_t c = 0; c < C; ++c) {
        xhat[c] = (xi[c] - mean) * rstd;
        g[c] = double(dyi[c]) * weight(c);
      }
      if (params) {
        for (int64_t c = 0; c < C; ++c) {
          pw[c] += dyi[c] * xhat[c];
          pb[c] += dyi[c];
        }
      }
      if (!dx) continue;
      const double mean_g = vec::row_sum(C, [&](int64_t c) { return g[c]; }) / double(C);
      const double mean_gx = vec::row_sum(C, [&](int64_t c) { return g[c] * xhat[c]; }) / double(C);
      T* dxi = dx + i * C;
      for (int64_t c = 0; c < C; ++c) dxi[c] = T(rstd * (g[c] - mean_g - xhat[c] * mean_gx));
    }
  };
  parallel_for(blocks, std::max<int64_t>(1, row_grain(C) / rows_per_block),
               [&](int64_t b0, int64_t b1) {
                 std::vector<double> row(2 * C);
                 with_weight(w, [&](auto weight) {
                   for (int64_t blk = b0; blk < b1; ++blk)
                     block_rows(blk, weight, row.data(), row.data() + C);
                 });
               });
  if (!params) return;
  // Block sums added into block 0 in block order; c is the inner loop, so it vectorises.
  double* total = partial.data();
  for (int64_t blk = 1; blk < blocks; ++blk) {
    for (int64_t c = 0; c < 2 * C; ++c) total[c] += partial[blk * 2 * C + c];
  }
  for (int64_t c = 0; c < C; ++c) {
    if (dw) dw[c] = T(total[c]);
    if (db) db[c] = T(total[C + c]);
  }
}

void check_layer_norm_param(const Tensor& p, const char* what, const Tensor& x, int64_t C) {
  if (!p.defined()) return;
  check(p.dim() == 1 && p.size(0) == C, "layer_norm: ", what, " has shape ", shape_str(p.shape()),
        ", expected [", C, "] (input shape ", shape_str(x.shape()), ")");
  check(p.dtype() == x.dtype(), "layer_norm: ", what, " is ", dtype_name(p.dtype()), ", input is ",
        dtype_name(x.dtype()));
}

// log(sum(exp(z))) of each row of a (B, K) tensor, max-subtracted, in double.
template <class T>
void row_log_sum_exp(const T* z, int64_t B, int64_t K, double* lse) {
  parallel_for(B, row_grain(K), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* zb = z + b * K;
      const T m = vec::row_max(zb, K);
      const double s = vec::row_sum(K, [&](int64_t k) { return vec::exp_of(T(zb[k] - m)); });
      lse[b] = double(m) + std::log(s);
    }
  });
}

Rows check_logits(const Tensor& logits) {
  check(logits.defined(), "cross_entropy: undefined logits");
  check(logits.dim() == 2, "cross_entropy: logits must be (B, K), got shape ",
        shape_str(logits.shape()));
  check(logits.size(0) > 0 && logits.size(1) > 0, "cross_entropy: empty logits of shape ",
        shape_str(logits.shape()));
  return Rows{logits.size(0), logits.size(1)};
}

// Sums per-row losses in row order (deterministic) and divides by the batch size.
Tensor batch_mean(const std::vector<double>& row_loss, DType dtype) {
  double total = 0;
  for (double l : row_loss) total += l;
  return full({}, total / double(row_loss.size()), dtype);
}

}  // namespace

Tensor softmax(const Tensor& a) {
  return softmax_op("softmax", a, false);
}
Tensor log_softmax(const Tensor& a) {
  return softmax_op("log_softmax", a, true);
}

namespace detail {

Tensor layer_norm_values(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                         std::vector<double>& stats) {
  const Rows r = rows_of("layer_norm", x);
  check_layer_norm_param(weight, "weight", x, r.C);
  check_layer_norm_param(bias, "bias", x, r.C);
  check(eps >= 0 && std::isfinite(eps), "layer_norm: eps must be finite and >= 0, got ", eps);
  check(r.C > 0, "layer_norm: last axis is empty (input shape ", shape_str(x.shape()), ")");
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  stats.resize(2 * r.rows);
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    layer_norm_forward(x.data<T>(), weight.defined() ? weight.data<T>() : nullptr,
                       bias.defined() ? bias.data<T>() : nullptr, eps, y.data<T>(), stats.data(),
                       r);
  });
  // mean 1, centred squares 3, normalise 2, then 1 each for the weight and the bias
  add_flops(double(x.numel()) * (6 + weight.defined() + bias.defined()));
  return y;
}

std::vector<Tensor> layer_norm_grads(const Tensor& x, const Tensor& weight,
                                     const std::vector<double>& stats, const Tensor& g, bool need_x,
                                     bool need_weight, bool need_bias) {
  const Rows r = rows_of("layer_norm", x);
  Tensor dx = need_x ? Tensor::empty(x.shape(), g.dtype()) : Tensor();
  Tensor dw = need_weight ? Tensor::empty({r.C}, g.dtype()) : Tensor();
  Tensor db = need_bias ? Tensor::empty({r.C}, g.dtype()) : Tensor();
  dispatch(g.dtype(), [&](auto z) {
    using T = decltype(z);
    layer_norm_backward(x.data<T>(), weight.defined() ? weight.data<T>() : nullptr, stats.data(),
                        g.data<T>(), need_x ? dx.data<T>() : nullptr,
                        need_weight ? dw.data<T>() : nullptr, need_bias ? db.data<T>() : nullptr,
                        r);
  });
  return {dx, dw, db};
}

}  // namespace detail

// Saved for backward: only (mean, rstd) per row, in double, besides x and the weight; x-hat
// is recomputed, which costs less than storing a second activation.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  auto stats = std::make_shared<std::vector<double>>();
  Tensor y = detail::layer_norm_values(x, weight, bias, eps, *stats);
  if (!any_requires_grad({x, weight, bias})) return record("layer_norm", y, {x}, nullptr);
  const bool need_x = needs_grad(x), need_w = needs_grad(weight), need_b = needs_grad(bias);
  Tensor xs = x.detach(), ws = weight.defined() ? weight.detach() : Tensor();
  return record("layer_norm", y, {x, weight, bias}, [=](const Tensor& g) {
    return detail::layer_norm_grads(xs, ws, *stats, g, need_x, need_w, need_b);
  });
}

// loss_b = (1-eps)(-logp_y) + eps * mean_k(-logp_k) = lse - (1-eps) z_y - eps * mean_k z_k.
Tensor cross_entropy(const Tensor& logits, const std::vector<int32_t>& labels,
                     double label_smoothing) {
  const Rows r = check_logits(logits);
  const int64_t B = r.rows, K = r.C;
  check(int64_t(labels.size()) == B, "cross_entropy: ", labels.size(), " labels for a batch of ", B,
        " (logits shape ", shape_str(logits.shape()), ")");
  for (int64_t b = 0; b < B; ++b) {
    if (labels[b] < 0 || labels[b] >= K)
      throw Error(cat_str("cross_entropy: label ", labels[b], " at batch index ", b,
                          " is outside [0, ", K, ") (logits shape ", shape_str(logits.shape()),
                          ")"));
  }
  const double eps = label_smoothing;
  check(eps >= 0 && eps <= 1, "cross_entropy: label_smoothing must be in [0, 1], got ", eps);
  // Saved for backward: the logits and the log-sum-exp of each row, from which the
  // softmax is rebuilt (B numbers instead of a (B, K) probability tensor).
  auto lse = std::make_shared<std::vector<double>>(B);
  std::vector<double> row_loss(B);
  dispatch(logits.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* zp = logits.data<T>();
    row_log_sum_exp(zp, B, K, lse->data());
    for (int64_t b = 0; b < B; ++b) {
      const double mean_z = vec::row_sum(K, [&](int64_t k) { return zp[b * K + k]; }) / double(K);
      row_loss[b] = (*lse)[b] - (1 - eps) * zp[b * K + labels[b]] - eps * mean_z;
    }
  });
  add_flops(6.0 * double(B * K));  // max, subtract, exp, sum, mean, weighted target
  Tensor loss = batch_mean(row_loss, logits.dtype());
  if (!any_requires_grad({logits})) return record("cross_entropy", loss, {logits}, nullptr);
  Tensor zs = logits.detach();
  auto ys = std::make_shared<std::vector<int32_t>>(labels);
  // dL/dz = (softmax(z) - q) / B with q = (1 - eps) onehot(y) + eps / K.
  return record("cross_entropy", loss, {logits}, [zs, lse, ys, eps, B, K](const Tensor& g) {
    Tensor dz = Tensor::empty(zs.shape(), zs.dtype());
    const double scale = g.item() / double(B);
    dispatch(zs.dtype(), [&](auto z) {
      using T = decltype(z);
      const T* zp = zs.data<T>();
      T* d = dz.data<T>();
      parallel_for(B, row_grain(K), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          for (int64_t k = 0; k < K; ++k) {
            const double q = (k == (*ys)[b] ? 1 - eps : 0.0) + eps / double(K);
            d[b * K + k] = T(scale * (std::exp(zp[b * K + k] - (*lse)[b]) - q));
          }
        }
      });
    });
    return std::vector<Tensor>{dz};
  });
}

// loss_b = sum_k -t_k logp_k = lse * sum(t) - sum(t * z).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  const Rows r = check_logits(logits);
  const int64_t B = r.rows, K = r.C;
  check(targets.defined() && targets.shape() == logits.shape(), "cross_entropy: targets of shape ",
        targets.defined() ? shape_str(targets.shape()) : "undefined",
        " do not match logits of shape ", shape_str(logits.shape()));
  check(targets.dtype() == logits.dtype(), "cross_entropy: targets are ",
        dtype_name(targets.dtype()), ", logits are ", dtype_name(logits.dtype()));
  // Saved for backward: logits, targets and the log-sum-exp of each row.
  auto lse = std::make_shared<std::vector<double>>(B);
  std::vector<double> row_loss(B);
  dispatch(logits.dtype(), [&](auto z) {
    using T = decltype(z);
    const T *zp = logits.data<T>(), *tp = targets.data<T>();
    row_log_sum_exp(zp, B, K, lse->data());
    for (int64_t b = 0; b < B; ++b) {
      const double sum_t = vec::row_sum(K, [&](int64_t k) { return tp[b * K + k]; });
      const double sum_tz =
          vec::row_sum(K, [&](int64_t k) { return double(tp[b * K + k]) * zp[b * K + k]; });
      row_loss[b] = (*lse)[b] * sum_t - sum_tz;
    }
  });
  add_flops(7.0 * double(B * K));  // max, subtract, exp, sum, sum(t), t * z and its sum
  Tensor loss = batch_mean(row_loss, logits.dtype());
  if (!any_requires_grad({logits})) return record("cross_entropy_soft", loss, {logits}, nullptr);
  Tensor zs = logits.detach(), ts = targets.detach();
  // dL/dz = (softmax(z) * sum(t) - t) / B; the targets get no gradient.
  return record("cross_entropy_soft", loss, {logits}, [zs, ts, lse, B, K](const Tensor& g) {
    Tensor dz = Tensor::empty(zs.shape(), zs.dtype());
    const double scale = g.item() / double(B);
    dispatch(zs.dtype(), [&](auto z) {
      using T = decltype(z);
      const T *zp = zs.data<T>(), *tp = ts.data<T>();
      T* d = dz.data<T>();
      parallel_for(B, row_grain(K), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const double sum_t = vec::row_sum(K, [&](int64_t k) { return tp[b * K + k]; });
          for (int64_t k = 0; k < K; ++k) {
            const double p = std::exp(zp[b * K + k] - (*lse)[b]);
            d[b * K + k] = T(scale * (p * sum_t - tp[b * K + k]));
          }
        }
      });
    });
    return std::vector<Tensor>{dz};
  });
}

// Element i is kept when the i-th draw rng.uniform() < 1 - p, drawing serially in element
// order (so a seed fixes the mask whatever the thread count); kept elements are scaled by
// 1/(1-p), so the expectation is unchanged.
Tensor dropout(const Tensor& x, double p, Rng& rng, bool training) {
  check(x.defined(), "dropout: undefined input");
  check(p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p, " (input shape ",
        shape_str(x.shape()), ")");
  if (!training || p == 0) return x;
  // Saved for backward: the mask as scale values (0 or 1/(1-p)), so dx = dy * mask.
  Tensor mask = Tensor::empty(x.shape(), x.dtype());
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  const double keep = 1 - p;
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    T* m = mask.data<T>();
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) m[i] = rng.uniform() < keep ? T(1 / keep) : T(0);
    parallel_for(x.numel(), 1 << 15, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) yp[i] = xp[i] * m[i];
    });
  });
  add_flops(double(x.numel()));
  return record("dropout", y, {x},
                [mask](const Tensor& g) { return std::vector<Tensor>{mul(g, mask)}; });
}

}  // namespace vg
