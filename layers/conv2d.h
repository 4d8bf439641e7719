// Conv2d: a 2-D convolution of channels-last images (conv2d in engine/ops/ops.h) with PyTorch's
// parameter layout and initialisation, so its weights load into nn.Conv2d and ONNX Conv as
// they are.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/rng.h"
#include "layers/module.h"

namespace vg::nn {

// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) in float32, drawn in float64 from `rng`: PyTorch's
// default Conv2d initialisation of the weight (kaiming_uniform_ with a = sqrt(5)) and of the
// bias alike.
Tensor conv_default_uniform(const Shape& shape, int64_t fan_in, Rng& rng);

class Conv2d : public Module {
 public:
  // weight [C_out, C_in, k, k] then bias [C_out] (no weight decay), both
  // conv_default_uniform with fan_in = C_in * k * k, in that order.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
         int64_t padding, Rng& rng);

  // x (N, H, W, C_in) -> (N, Ho, Wo, C_out), Ho = (H + 2 padding - k) / stride + 1.
  Tensor forward(const Tensor& x) override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }
  int64_t out_channels() const { return out_channels_; }
  int64_t stride() const { return stride_; }
  int64_t padding() const { return padding_; }
  // The side of the output for an input side of `size`.
  int64_t output_size(int64_t size) const;
  std::string describe() const;  // "Conv2d(1, 32, kernel_size=3, stride=2, padding=1)"

 private:
  int64_t in_channels_, out_channels_, kernel_size_, stride_, padding_;
  Tensor weight_, bias_;
};

}  // namespace vg::nn
