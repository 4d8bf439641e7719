// LAMB with timm's semantics (timm/optim/lamb.py, the NVLAMB / apex FusedLAMB behaviour).
#pragma once

#include "engine/optim/optimizer.h"

namespace vg::optim {

// One step():
// 1. Global clip: g_norm = L2 norm over every gradient of every group; every gradient is
//    divided IN PLACE by max(g_norm / max_grad_norm, 1) (no epsilon). max_grad_norm <= 0
//    disables it. The clip is optimiser-wide configuration, not saved state.
// 2. Per group: t += 1 (one counter per group); bc1 = 1 - beta1^t, bc2 = 1 - beta2^t (1 when
//    bias_correction is off); beta3 = 1 - beta1 with grad_averaging, else 1.
// 3. Per parameter: m = beta1 m + beta3 g; v = beta2 v + (1 - beta2) g^2;
//    update = (m / bc1) / (sqrt(v) / sqrt(bc2) + eps), plus weight_decay * p if wd != 0.
// 4. If wd != 0 or always_adapt: trust = ||p|| / ||update|| (1 if either is 0; capped at 1
//    with trust_clip) and update *= trust. So a decayed tensor moves by exactly lr * ||p||,
//    while a wd = 0 tensor takes a plain Adam step.
// 5. p -= lr * update.
// Group options: "beta1", "beta2", "eps", and "bias_correction", "grad_averaging",
// "always_adapt", "trust_clip" as 0 or 1.
class Lamb : public Optimizer {
 public:
  Lamb(std::vector<ParamGroup> groups, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-6,
       double max_grad_norm = 1.0, bool bias_correction = true, bool grad_averaging = true,
       bool always_adapt = false, bool trust_clip = false);
  void step() override;
  std::string name() const override { return "lamb"; }

  double max_grad_norm() const { return max_grad_norm_; }
  // The global gradient norm measured by the last step() (before clipping), for logging.
  double last_grad_norm() const { return last_grad_norm_; }

 protected:
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void validate_group(const ParamGroup& group) const override;

 private:
  double max_grad_norm_;
  double last_grad_norm_ = 0;
};

}  // namespace vg::optim
