#include "engine/optim/adamw.h"

#include <cmath>

#include "engine/core/parallel.h"

namespace vg::optim {

void check_adam_options(const std::string& optimizer, const ParamGroup& g) {
  for (const char* beta : {"beta1", "beta2"}) {
    const double b = g.options.at(beta);
    check(b >= 0 && b < 1, optimizer, ": group '", g.name, "': ", beta, " must be in [0, 1), got ",
          b);
  }
  check(g.options.at("eps") >= 0, optimizer, ": group '", g.name, "': eps must be >= 0, got ",
        g.options.at("eps"));
}

AdamW::AdamW(std::vector<ParamGroup> groups, double beta1, double beta2, double eps)
    : Optimizer(std::move(groups)) {
  set_option_defaults({{"beta1", beta1}, {"beta2", beta2}, {"eps", eps}});
}

void AdamW::validate_group(const ParamGroup& g) const {
  Optimizer::validate_group(g);
  check_adam_options(name(), g);
}

void AdamW::step() {
  advance_step();
  for (const ParamGroup& group : groups()) {
    const double beta1 = group.options.at("beta1"), beta2 = group.options.at("beta2");
    const double eps = group.options.at("eps"), lr = group.lr, wd = group.weight_decay;
    for (const Parameter& p : group.params) {
      Tensor grad = grad_of(p);
      if (!grad.defined()) continue;
      ParamState& state = state_of(p);
      const double t = static_cast<double>(++state.step);
      Tensor exp_avg = zero_buffer(state, p, "exp_avg");
      Tensor exp_avg_sq = zero_buffer(state, p, "exp_avg_sq");
      // Scalars in double as PyTorch computes them in Python, then cast to the parameter's
      // dtype where they meet the tensors.
      const double bias_correction1 = 1 - std::pow(beta1, t);
      const double bias_correction2 = 1 - std::pow(beta2, t);
      const double step_size = lr / bias_correction1;
      Tensor param = p.tensor;
      dispatch(param.dtype(), [&](auto z) {
        using T = decltype(z);
        T* w = param.data<T>();
        const T* g = grad.data<T>();
        T* m = exp_avg.data<T>();
        T* v = exp_avg_sq.data<T>();
        const T decay = T(1 - lr * wd), b1 = T(beta1), b2 = T(beta2);
        const T one_minus_b1 = T(1 - beta1), one_minus_b2 = T(1 - beta2);
        const T bc2_sqrt = T(std::sqrt(bias_correction2)), eps_t = T(eps);
        const T neg_step_size = T(-step_size);
        parallel_for(param.numel(), 1 << 13, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) {
            const T gi = g[i];
            const T wi = w[i] * decay;
            const T mi = m[i] * b1 + one_minus_b1 * gi;
            const T vi = v[i] * b2 + one_minus_b2 * gi * gi;
            const T denom = std::sqrt(vi) / bc2_sqrt + eps_t;
            m[i] = mi;
            v[i] = vi;
            w[i] = wi + neg_step_size * mi / denom;
          }
        });
      });
    }
  }
}

}  // namespace vg::optim
