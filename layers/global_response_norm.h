// Global Response Normalization (ConvNeXt V2), for tokens and images channels-last:
//   g = L2 norm over the spatial axes (every axis but batch and channel), per sample and
//   channel; n = g / (mean_C g + eps); y = gamma * (x * n) + beta + x.
// gamma and beta start at zero, so the layer starts as the identity.
#pragma once

#include <cstdint>
#include <string>

#include "layers/module.h"

namespace vg::nn {

class GlobalResponseNorm : public Module {
 public:
  // gamma, beta (dim) zeros, without weight decay.
  explicit GlobalResponseNorm(int64_t dim, double eps = 1e-6);

  // x (B, spatial..., dim) with at least one spatial axis: (B, T, C) or (B, H, W, C).
  Tensor forward(const Tensor& x) override;

  const Tensor& gamma() const { return gamma_; }
  const Tensor& beta() const { return beta_; }
  int64_t dim() const { return dim_; }
  double eps() const { return eps_; }

 private:
  std::string describe() const;  // "GlobalResponseNorm(dim=256)"
  void check_input(const Shape& input_shape) const;

  int64_t dim_;
  double eps_;
  Tensor gamma_, beta_;
};

}  // namespace vg::nn
