#include "layers/activation.h"

namespace vg::nn {

GELU::GELU(GeluApprox approx) : Module("GELU"), approx_(approx) {}

Tensor GELU::forward(const Tensor& x) {
  return gelu(x, approx_);
}

}  // namespace vg::nn
