#include "layers/linear.h"

#include "engine/ops/ops.h"
#include "layers/channel_check.h"

namespace vg::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, Rng& rng)
    : Module("Linear"), in_features_(in_features), out_features_(out_features) {
  check(in_features > 0 && out_features > 0, describe(), ": sizes must be positive");
  // timm's trunc_normal_(std=.02) with absolute bounds +-2: in practice a plain N(0, .02^2).
  weight_ = register_parameter(
      "weight", trunc_normal({out_features, in_features}, rng, 0.0, 0.02, -2.0, 2.0));
  if (bias) bias_ = register_parameter("bias", zeros({out_features}), {.no_weight_decay = true});
}

std::string Linear::describe() const {
  return cat_str("Linear(in_features=", in_features_, ", out_features=", out_features_, ")");
}

void Linear::check_input(const Shape& input_shape) const {
  const auto name = [this] { return describe(); };
  check_channels(name, input_shape, -1, in_features_);
}

Tensor Linear::forward(const Tensor& x) {
  check_input(x.shape());
  return linear(x, weight_, bias_);
}

}  // namespace vg::nn
