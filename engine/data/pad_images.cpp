#include "engine/data/pad_images.h"

#include <algorithm>
#include <exception>

#include "engine/core/error.h"
#include "engine/core/parallel.h"

namespace vg::data {

TensorDataset pad_images(const Dataset& data, int64_t side) {
  const ImageShape in = data.image_shape();
  const int64_t n = data.size(), c = in.channels;
  check(side >= in.height && side >= in.width, "pad_images: side ", side, " is smaller than the ",
        in.height, "x", in.width, " images of '", data.name(), "'");
  const int64_t top = (side - in.height) / 2, left = (side - in.width) / 2;
  const Normalisation normalisation = data.normalisation();
  normalisation.validate(c, "pad_images: data set '" + data.name() + "'");
  const std::vector<float> black = normalisation.black();
  Tensor images = Tensor::empty({n, side, side, c}, DType::f32);
  std::vector<int32_t> labels(n);
  float* dst = images.data<float>();
  // Items are read one at a time, so that any Dataset can be padded; an exception must not
  // leave a thread of the parallel region, so each is kept and the first thrown after it.
  std::vector<std::exception_ptr> errors(n);
  parallel_for(n, 16, [&](int64_t i0, int64_t i1) {
    std::vector<float> image(in.numel());
    for (int64_t i = i0; i < i1; ++i) {
      try {
        labels[i] = data.item(i, image.data());
      } catch (...) {
        errors[i] = std::current_exception();
        continue;
      }
      float* out = dst + i * side * side * c;
      for (int64_t k = 0; k < side * side; ++k) std::copy_n(black.data(), c, out + k * c);
      for (int64_t y = 0; y < in.height; ++y)
        std::copy_n(image.data() + y * in.width * c, in.width * c,
                    out + ((top + y) * side + left) * c);
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return TensorDataset(std::move(images), std::move(labels), data.num_classes(), normalisation,
                       data.name());
}

}  // namespace vg::data
