// LayerScale (CaiT, DeiT III): a learnable per-channel scale of a residual branch,
// y = x * gamma over the last axis of any channels-last tensor.
#pragma once

#include <cstdint>
#include <string>

#include "layers/module.h"

namespace vg::nn {

class LayerScale : public Module {
 public:
  // gamma (dim) all init_value, without weight decay. 1e-4 is the DeiT/CaiT default (timm's
  // own LayerScale defaults to 1e-5).
  explicit LayerScale(int64_t dim, double init_value = 1e-4);

  // x (..., dim) -> x * gamma; any other last axis is a vg::Error.
  Tensor forward(const Tensor& x) override;

  const Tensor& gamma() const { return gamma_; }
  int64_t dim() const { return dim_; }
  double init_value() const { return init_value_; }

 private:
  std::string describe() const;  // "LayerScale(dim=768)"

  int64_t dim_;
  double init_value_;
  Tensor gamma_;
};

}  // namespace vg::nn
