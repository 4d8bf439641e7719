#include "engine/optim/sgd.h"

#include <cmath>

#include "engine/core/parallel.h"

namespace vg::optim {

SGD::SGD(std::vector<ParamGroup> groups, double momentum, double dampening, bool nesterov)
    : Optimizer(std::move(groups)) {
  set_option_defaults(
      {{"momentum", momentum}, {"dampening", dampening}, {"nesterov", nesterov ? 1.0 : 0.0}});
}

void SGD::validate_group(const ParamGroup& g) const {
  Optimizer::validate_group(g);
  const double momentum = g.options.at("momentum"), nesterov = g.options.at("nesterov");
  check(momentum >= 0, "sgd: group '", g.name, "': momentum must be >= 0, got ", momentum);
  check(nesterov == 0 || nesterov == 1, "sgd: group '", g.name, "': nesterov must be 0 or 1, got ",
        nesterov);
  check(nesterov == 0 || (momentum > 0 && g.options.at("dampening") == 0), "sgd: group '", g.name,
        "': nesterov momentum requires momentum > 0 and dampening 0");
}

void SGD::step() {
  advance_step();
  for (const ParamGroup& group : groups()) {
    const double momentum = group.options.at("momentum");
    const double dampening = group.options.at("dampening");
    const bool nesterov = group.options.at("nesterov") != 0;
    const double lr = group.lr, wd = group.weight_decay;
    for (const Parameter& p : group.params) {
      Tensor grad = grad_of(p);
      if (!grad.defined()) continue;
      ParamState& state = state_of(p);
      ++state.step;
      Tensor& buf_tensor = state.buffers["momentum_buffer"];
      // PyTorch starts the buffer as a copy of the first (decayed) gradient, not from zeros.
      const bool first = !buf_tensor.defined();
      if (momentum != 0 && first) buf_tensor = Tensor::empty(p.tensor.shape(), p.tensor.dtype());
      Tensor param = p.tensor;
      dispatch(param.dtype(), [&](auto z) {
        using T = decltype(z);
        T* w = param.data<T>();
        const T* g = grad.data<T>();
        T* buf = momentum != 0 ? buf_tensor.data<T>() : nullptr;
        const T wd_t = T(wd), mom = T(momentum), keep = T(1 - dampening), neg_lr = T(-lr);
        parallel_for(param.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) {
            T d = g[i];
            if (wd != 0) d = d + wd_t * w[i];
            if (buf) {
              buf[i] = first ? d : buf[i] * mom + keep * d;
              d = nesterov ? d + mom * buf[i] : buf[i];
            }
            w[i] = w[i] + neg_lr * d;
          }
        });
      });
    }
  }
}

}  // namespace vg::optim
