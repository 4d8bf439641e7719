// LayerNorm over the last axis, as timm's (eps 1e-6, biased variance, eps inside the sqrt).
#pragma once

#include <cstdint>
#include <string>

#include "layers/token_norm.h"

namespace vg::nn {

class LayerNorm : public TokenNorm {
 public:
  // weight (dim) ones, bias (dim) zeros, both without weight decay.
  explicit LayerNorm(int64_t dim, double eps = 1e-6);

  // x (..., dim) -> (..., dim), normalised per row.
  Tensor forward(const Tensor& x) override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }
  int64_t dim() const override { return dim_; }
  double eps() const { return eps_; }
  ChannelMap channel_map() const override;  // layer_norm with weight, bias, eps

  std::string describe() const override;  // "LayerNorm(dim=64)"

 private:
  int64_t dim_;
  double eps_;
  Tensor weight_, bias_;
};

}  // namespace vg::nn
