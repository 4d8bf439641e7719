// Linear: y = x W^T + b over the last axis, with timm's initialisation.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/rng.h"
#include "layers/module.h"

namespace vg::nn {

class Linear : public Module {
 public:
  // weight (out, in) ~ trunc_normal(std .02, a=-2, b=2); bias (out) zeros, no weight decay.
  Linear(int64_t in_features, int64_t out_features, bool bias, Rng& rng);

  // x (..., in_features) -> (..., out_features).
  Tensor forward(const Tensor& x) override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // undefined when built without bias
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

  std::string describe() const;  // "Linear(in_features=64, out_features=192)"
  // The check forward runs first (also run by the fused forms in layers/fusion.cpp).
  void check_input(const Shape& input_shape) const;

 private:
  int64_t in_features_, out_features_;
  Tensor weight_, bias_;
};

}  // namespace vg::nn
