#include "engine/optim/lamb.h"

#include <algorithm>
#include <cmath>

#include "engine/kernels/optim_sums.h"
#include "engine/optim/adamw.h"

namespace vg::optim {
namespace {

// The update of one element (step 3 above); both passes of a trust-ratio step call it, so
// the second recomputes exactly what the first measured.
template <class T>
struct LambUpdate {
  T bc1, bc2_sqrt, eps, wd;
  bool decay;
  T operator()(T m, T v, T w) const {
    T u = (m / bc1) / (std::sqrt(v) / bc2_sqrt + eps);
    if (decay) u = u + wd * w;
    return u;
  }
};

// Step 2: one group's scalars at its step t, in double (as timm computes them in Python).
struct GroupScalars {
  double beta1 = 0, beta2 = 0, eps = 0, bc1 = 1, bc2 = 1, beta3 = 1, lr = 0, wd = 0;
  bool adapt = false, trust_clip = false;
};

GroupScalars scalars_of(const ParamGroup& group, int64_t step) {
  const auto& o = group.options;
  GroupScalars s;
  s.beta1 = o.at("beta1"), s.beta2 = o.at("beta2"), s.eps = o.at("eps");
  const double t = static_cast<double>(step);
  const bool bias_correction = o.at("bias_correction") != 0;
  s.bc1 = bias_correction ? 1 - std::pow(s.beta1, t) : 1.0;
  s.bc2 = bias_correction ? 1 - std::pow(s.beta2, t) : 1.0;
  s.beta3 = o.at("grad_averaging") != 0 ? 1 - s.beta1 : 1.0;
  s.lr = group.lr, s.wd = group.weight_decay;
  s.adapt = s.wd != 0 || o.at("always_adapt") != 0;
  s.trust_clip = o.at("trust_clip") != 0;
  return s;
}

// Steps 3 to 5 on one tensor of n elements: the parameter w, its gradient g (divided by
// `clip` in place, step 1's clip), and its moments m and v.
template <class T>
void lamb_update(int64_t n, T* w, T* g, T* m, T* v, const GroupScalars& s, double clip) {
  const T clip_t = T(clip), b1 = T(s.beta1), b2 = T(s.beta2), b3 = T(s.beta3);
  const T one_minus_b2 = T(1 - s.beta2), neg_lr = T(-s.lr);
  const LambUpdate<T> update{T(s.bc1), T(std::sqrt(s.bc2)), T(s.eps), T(s.wd), s.wd != 0};
  // Pass 1, fused: clip g in place, move the moments, and (for the trust ratio) measure ||p||
  // and ||update||. Without the trust ratio it also moves p.
  const auto norms = deterministic_sums<2>(n, [&](int64_t i, auto& acc) {
    const T gi = clip != 1.0 ? g[i] / clip_t : g[i];
    g[i] = gi;
    const T mi = m[i] * b1 + b3 * gi;
    const T vi = v[i] * b2 + one_minus_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const T u = update(mi, vi, w[i]);
    if (s.adapt) {
      acc[0] += double(w[i]) * double(w[i]);
      acc[1] += double(u) * double(u);
    } else {
      w[i] = w[i] + neg_lr * u;
    }
  });
  if (!s.adapt) return;
  // Pass 2: the trust ratio is known; recompute the update and move p.
  const double w_norm = std::sqrt(norms[0]), u_norm = std::sqrt(norms[1]);
  double trust = w_norm > 0 && u_norm > 0 ? w_norm / u_norm : 1.0;
  if (s.trust_clip) trust = std::min(trust, 1.0);
  const T trust_t = T(trust);
  parallel_for(n, 1 << 13, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) w[i] = w[i] + neg_lr * (update(m[i], v[i], w[i]) * trust_t);
  });
}

}  // namespace

Lamb::Lamb(std::vector<ParamGroup> groups, double beta1, double beta2, double eps,
           double max_grad_norm, bool bias_correction, bool grad_averaging, bool always_adapt,
           bool trust_clip)
    : Optimizer(std::move(groups)), max_grad_norm_(max_grad_norm) {
  check(std::isfinite(max_grad_norm),
        "lamb: max_grad_norm must be finite (<= 0 disables the "
        "clip), got ",
        max_grad_norm);
  set_option_defaults({{"beta1", beta1},
                       {"beta2", beta2},
                       {"eps", eps},
                       {"bias_correction", bias_correction ? 1.0 : 0.0},
                       {"grad_averaging", grad_averaging ? 1.0 : 0.0},
                       {"always_adapt", always_adapt ? 1.0 : 0.0},
                       {"trust_clip", trust_clip ? 1.0 : 0.0}});
}

void Lamb::validate_group(const ParamGroup& g) const {
  Optimizer::validate_group(g);
  check_adam_options(name(), g);
  for (const char* flag : {"bias_correction", "grad_averaging", "always_adapt", "trust_clip"}) {
    const double x = g.options.at(flag);
    check(x == 0 || x == 1, "lamb: group '", g.name, "': ", flag, " must be 0 or 1, got ", x);
  }
}

void Lamb::step() {
  advance_step();
  // 1. The global gradient norm over every parameter that has a gradient, and the clip.
  double sum_sq = 0;
  for (const ParamGroup& group : groups())
    for (const Parameter& p : group.params)
      if (Tensor g = grad_of(p); g.defined()) sum_sq += sum_of_squares(g);
  last_grad_norm_ = std::sqrt(sum_sq);
  const double clip = max_grad_norm_ > 0 ? std::max(last_grad_norm_ / max_grad_norm_, 1.0) : 1.0;

  for (size_t gi = 0; gi < groups().size(); ++gi) {
    const GroupScalars scalars = scalars_of(groups()[gi], group_step(gi));
    for (const Parameter& p : groups()[gi].params) {
      Tensor grad = grad_of(p);
      if (!grad.defined()) continue;
      ParamState& state = state_of(p);
      ++state.step;
      Tensor exp_avg = zero_buffer(state, p, "exp_avg");
      Tensor exp_avg_sq = zero_buffer(state, p, "exp_avg_sq");
      Tensor param = p.tensor;
      dispatch(param.dtype(), [&](auto z) {
        using T = decltype(z);
        lamb_update(param.numel(), param.data<T>(), grad.data<T>(), exp_avg.data<T>(),
                    exp_avg_sq.data<T>(), scalars, clip);
      });
    }
  }
}

}  // namespace vg::optim
