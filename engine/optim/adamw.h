// AdamW (decoupled weight decay), as torch.optim.AdamW and timm's AdamWLegacy.
#pragma once

#include "engine/optim/optimizer.h"

namespace vg::optim {

// Per parameter, with its own step counter t (PyTorch keeps one per parameter):
//   t += 1;  p *= 1 - lr * weight_decay          (decay first, with the current lr)
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   p -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Group options: "beta1", "beta2", "eps". One fused pass over p, g, m, v per parameter.
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<ParamGroup> groups, double beta1 = 0.9, double beta2 = 0.999,
        double eps = 1e-8);
  void step() override;
  std::string name() const override { return "adamw"; }

 protected:
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void validate_group(const ParamGroup& group) const override;
};

// Shared by AdamW and Lamb: betas in [0, 1) and eps >= 0, else a vg::Error naming the group.
void check_adam_options(const std::string& optimizer, const ParamGroup& group);

}  // namespace vg::optim
