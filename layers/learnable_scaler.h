// LearnableScaler (nghiemtuan/LearnableScaler): a drop-in replacement of LayerNorm that only
// scales and shifts each channel, y = a * x + b, with a drawn from N(0, 1).
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/rng.h"
#include "layers/module.h"
#include "layers/token_norm.h"

namespace vg::nn {

// Channels last: x (..., C), any rank.
class LearnableScaler : public TokenNorm {
 public:
  // a (C) ~ N(0, 1) from rng (ones when ones_init), b (C) zeros; both without weight decay.
  LearnableScaler(int64_t num_channels, Rng& rng, bool ones_init = false);

  Tensor forward(const Tensor& x) override;

  const Tensor& a() const { return a_; }
  const Tensor& b() const { return b_; }
  int64_t num_channels() const { return num_channels_; }
  int64_t dim() const override { return num_channels_; }
  ChannelMap channel_map() const override;  // affine with a, b

  std::string describe() const override;  // "LearnableScaler(num_channels=64)"

 private:
  int64_t num_channels_;
  Tensor a_, b_;
};

// Channels first: x (B, C, H, W), y = a[None,:,None,None] * x + b[None,:,None,None].
class LearnableScaler2d : public Module {
 public:
  LearnableScaler2d(int64_t num_channels, Rng& rng, bool ones_init = false);

  Tensor forward(const Tensor& x) override;

  const Tensor& a() const { return a_; }
  const Tensor& b() const { return b_; }
  int64_t num_channels() const { return num_channels_; }

 private:
  std::string describe() const;  // "LearnableScaler2d(num_channels=64)"
  void check_input(const Shape& input_shape) const;

  int64_t num_channels_;
  Tensor a_, b_;
};

}  // namespace vg::nn
