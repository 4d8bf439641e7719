#include "layers/activation.h"

namespace vg::nn {

GELU::GELU(GeluApprox approx) : Module("GELU"), approx_(approx) {}

Tensor GELU::forward(const Tensor& x) {
  return gelu(x, approx_);
}

double GELU::flop_count(const Shape& input_shape) const {
  return (approx_ == GeluApprox::none ? 8.0 : 10.0) * double(shape_numel(input_shape));
}

}  // namespace vg::nn
