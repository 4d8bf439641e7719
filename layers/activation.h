// GELU as a module, so it appears in a model's tree (timm's Mlp has an "act" child).
#pragma once

#include "engine/ops/ops.h"
#include "layers/module.h"

namespace vg::nn {

class GELU : public Module {
 public:
  // none: the exact erf form (timm's nn.GELU() default); tanh: the approximation.
  explicit GELU(GeluApprox approx = GeluApprox::none);

  Tensor forward(const Tensor& x) override;

  GeluApprox approx() const { return approx_; }

 private:
  GeluApprox approx_;
};

}  // namespace vg::nn
