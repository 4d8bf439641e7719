#include "layers/learnable_scaler.h"

#include "engine/ops/ops.h"
#include "layers/channel_check.h"

namespace vg::nn {
namespace {

// The reference overwrites ones with normal_(), so a ~ N(0, 1): about half the channels
// start with a negative scale. ones_init is the obvious alternative, kept for experiments.
Tensor initial_scale(int64_t num_channels, Rng& rng, bool ones_init) {
  return ones_init ? ones({num_channels}) : randn({num_channels}, rng);
}

}  // namespace

// --- LearnableScaler (channels last) -------------------------------------------------------

LearnableScaler::LearnableScaler(int64_t num_channels, Rng& rng, bool ones_init)
    : TokenNorm("LearnableScaler"), num_channels_(num_channels) {
  check(num_channels > 0, describe(), ": num_channels must be positive");
  a_ = register_parameter("a", initial_scale(num_channels, rng, ones_init),
                          {.no_weight_decay = true});
  b_ = register_parameter("b", zeros({num_channels}), {.no_weight_decay = true});
}

std::string LearnableScaler::describe() const {
  return cat_str("LearnableScaler(num_channels=", num_channels_, ")");
}

ChannelMap LearnableScaler::channel_map() const {
  return {.kind = ChannelMap::Kind::affine, .scale = a_, .shift = b_};
}

Tensor LearnableScaler::forward(const Tensor& x) {
  const auto name = [this] { return describe(); };
  check_channels(name, x.shape(), -1, num_channels_);
  return channel_affine(x, a_, b_);
}

// --- LearnableScaler2d (channels first) ----------------------------------------------------

LearnableScaler2d::LearnableScaler2d(int64_t num_channels, Rng& rng, bool ones_init)
    : Module("LearnableScaler2d"), num_channels_(num_channels) {
  check(num_channels > 0, describe(), ": num_channels must be positive");
  a_ = register_parameter("a", initial_scale(num_channels, rng, ones_init),
                          {.no_weight_decay = true});
  b_ = register_parameter("b", zeros({num_channels}), {.no_weight_decay = true});
}

std::string LearnableScaler2d::describe() const {
  return cat_str("LearnableScaler2d(num_channels=", num_channels_, ")");
}

void LearnableScaler2d::check_input(const Shape& input_shape) const {
  const auto name = [this] { return describe(); };
  check(input_shape.size() == 4, name, ": input must be (B, C, H, W), got shape ", input_shape);
  check_channels(name, input_shape, 1, num_channels_);
}

Tensor LearnableScaler2d::forward(const Tensor& x) {
  check_input(x.shape());
  // Rare (channels-first is not the engine's layout), so plain broadcast ops suffice.
  const Shape per_channel{1, num_channels_, 1, 1};
  return add(mul(x, a_.reshape(per_channel)), b_.reshape(per_channel));
}

}  // namespace vg::nn
