#include "layers/layer_norm.h"

#include "engine/ops/ops.h"
#include "layers/channel_check.h"

namespace vg::nn {

LayerNorm::LayerNorm(int64_t dim, double eps) : TokenNorm("LayerNorm"), dim_(dim), eps_(eps) {
  check(dim > 0, describe(), ": dim must be positive");
  check(eps >= 0, describe(), ": eps must be >= 0, got ", eps);
  weight_ = register_parameter("weight", ones({dim}), {.no_weight_decay = true});
  bias_ = register_parameter("bias", zeros({dim}), {.no_weight_decay = true});
}

std::string LayerNorm::describe() const {
  return cat_str("LayerNorm(dim=", dim_, ")");
}

ChannelMap LayerNorm::channel_map() const {
  return {.kind = ChannelMap::Kind::layer_norm, .scale = weight_, .shift = bias_, .eps = eps_};
}

Tensor LayerNorm::forward(const Tensor& x) {
  const auto name = [this] { return describe(); };
  check_channels(name, x.shape(), -1, dim_);
  return layer_norm(x, weight_, bias_, eps_);
}

}  // namespace vg::nn
