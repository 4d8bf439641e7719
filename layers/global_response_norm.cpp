#include "layers/global_response_norm.h"

#include "engine/ops/ops.h"
#include "layers/channel_check.h"

namespace vg::nn {

GlobalResponseNorm::GlobalResponseNorm(int64_t dim, double eps)
    : Module("GlobalResponseNorm"), dim_(dim), eps_(eps) {
  check(dim > 0, describe(), ": dim must be positive");
  check(eps >= 0, describe(), ": eps must be >= 0, got ", eps);
  gamma_ = register_parameter("gamma", zeros({dim}), {.no_weight_decay = true});
  beta_ = register_parameter("beta", zeros({dim}), {.no_weight_decay = true});
}

std::string GlobalResponseNorm::describe() const {
  return cat_str("GlobalResponseNorm(dim=", dim_, ")");
}

void GlobalResponseNorm::check_input(const Shape& input_shape) const {
  // Without a spatial axis the norm would run over nothing but the channel itself.
  const auto name = [this] { return describe(); };
  check(input_shape.size() >= 3, name, ": input must be (B, spatial..., C) with at least ",
        "one spatial axis, got shape ", input_shape);
  check_channels(name, input_shape, -1, dim_);
}

Tensor GlobalResponseNorm::forward(const Tensor& x) {
  check_input(x.shape());
  return global_response_norm(x, gamma_, beta_, eps_);
}

}  // namespace vg::nn
