#include "layers/conv2d.h"

#include <cmath>

#include "engine/ops/ops.h"
#include "layers/channel_check.h"

namespace vg::nn {

Tensor conv_default_uniform(const Shape& shape, int64_t fan_in, Rng& rng) {
  const double bound = 1.0 / std::sqrt(double(fan_in));
  Tensor t = rand(shape, rng, DType::f64);
  return (t * (2 * bound) - bound).to(DType::f32);
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
               int64_t padding, Rng& rng)
    : Module("Conv2d"),
      in_channels_(in_channels),
      out_channels_(out_channels),
      kernel_size_(kernel_size),
      stride_(stride),
      padding_(padding) {
  check(in_channels > 0 && out_channels > 0 && kernel_size > 0 && stride > 0 && padding >= 0,
        describe(), ": sizes must be positive (padding >= 0)");
  const int64_t fan_in = in_channels * kernel_size * kernel_size;
  weight_ = register_parameter(
      "weight",
      conv_default_uniform({out_channels, in_channels, kernel_size, kernel_size}, fan_in, rng));
  bias_ = register_parameter("bias", conv_default_uniform({out_channels}, fan_in, rng),
                             {.no_weight_decay = true});
}

int64_t Conv2d::output_size(int64_t size) const {
  return (size + 2 * padding_ - kernel_size_) / stride_ + 1;
}

std::string Conv2d::describe() const {
  return cat_str("Conv2d(", in_channels_, ", ", out_channels_, ", kernel_size=", kernel_size_,
                 ", stride=", stride_, ", padding=", padding_, ")");
}

Tensor Conv2d::forward(const Tensor& x) {
  const auto name = [this] { return describe(); };
  check(x.dim() == 4, name, ": input must be (N, H, W, ", in_channels_, "), got ", x.shape());
  check_channels(name, x.shape(), -1, in_channels_);
  return conv2d(x, weight_, bias_, stride_, padding_);
}

}  // namespace vg::nn
