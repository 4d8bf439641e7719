// Stochastic gradient descent with momentum, as torch.optim.SGD.
#pragma once

#include "engine/optim/optimizer.h"

namespace vg::optim {

// Per element, with d = g + weight_decay * p (L2 folded into the gradient):
//   buf = d on the first step, else buf = momentum * buf + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf        (only when momentum != 0)
//   p -= lr * d
// Group options: "momentum", "dampening", "nesterov" (0 or 1). Nesterov needs momentum > 0
// and dampening 0, as in PyTorch. The gradients are not modified.
class SGD : public Optimizer {
 public:
  SGD(std::vector<ParamGroup> groups, double momentum = 0, double dampening = 0,
      bool nesterov = false);
  void step() override;
  std::string name() const override { return "sgd"; }

 protected:
  std::vector<std::string> buffer_names() const override { return {"momentum_buffer"}; }
  void validate_group(const ParamGroup& group) const override;
};

}  // namespace vg::optim
