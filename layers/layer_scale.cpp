#include "layers/layer_scale.h"

#include "engine/ops/ops.h"
#include "layers/channel_check.h"

namespace vg::nn {

LayerScale::LayerScale(int64_t dim, double init_value)
    : Module("LayerScale"), dim_(dim), init_value_(init_value) {
  check(dim > 0, describe(), ": dim must be positive");
  gamma_ = register_parameter("gamma", full({dim}, init_value), {.no_weight_decay = true});
}

std::string LayerScale::describe() const {
  return cat_str("LayerScale(dim=", dim_, ")");
}

Tensor LayerScale::forward(const Tensor& x) {
  const auto name = [this] { return describe(); };
  check_channels(name, x.shape(), -1, dim_);
  // Out of place (never timm's inplace mul_): x may be saved for another op's backward.
  return channel_affine(x, gamma_);
}

}  // namespace vg::nn
