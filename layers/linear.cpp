#include "layers/linear.h"

#include "engine/ops/ops.h"
#include "layers/channel_check.h"
#include "layers/layer_norm.h"
#include "layers/learnable_scaler.h"

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
  check_channels(describe(), input_shape, -1, in_features_);
}

Tensor Linear::forward(const Tensor& x) {
  auto scope = enter();
  check_input(x.shape());
  return linear(x, weight_, bias_);
}

Tensor Linear::forward(const Tensor& x, const LinearFusion& fusion) {
  if (!fusion.input_norm) {
    if (!fusion.out_scale.defined()) return forward(x);
    auto scope = enter();
    check_input(x.shape());
    return scaled_linear(x, weight_, bias_, fusion.out_scale);
  }
  check(!fusion.out_scale.defined(), describe(), ": an input norm and an output scale together");
  auto scope = enter();
  check_input(x.shape());
  Module& norm = *fusion.input_norm;
  if (auto* ln = dynamic_cast<LayerNorm*>(&norm)) {
    check_channels(ln->describe(), x.shape(), -1, ln->dim());
    return layer_norm_linear(x, ln->weight(), ln->bias(), ln->eps(), weight_, bias_);
  }
  if (auto* ls = dynamic_cast<LearnableScaler*>(&norm)) {
    check_channels(ls->describe(), x.shape(), -1, ls->num_channels());
    return affine_linear(x, ls->a(), ls->b(), weight_, bias_);
  }
  throw Error(cat_str(describe(), ": cannot fuse ", norm.type_name(), " into its input"));
}

double Linear::flop_count(const Shape& input_shape) const {
  check_input(input_shape);
  const double rows = double(num_rows(input_shape));
  return 2.0 * rows * in_features_ * out_features_ + (bias_.defined() ? rows * out_features_ : 0);
}

Shape Linear::output_shape(const Shape& input_shape) const {
  check_input(input_shape);
  Shape out = input_shape;
  out.back() = out_features_;
  return out;
}

}  // namespace vg::nn
