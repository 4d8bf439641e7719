#include "engine/data/pad_images.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/parallel.h"

namespace vg::data {

Dataset pad_images(const Dataset& data, int64_t side) {
  const Tensor& in = data.images;
  check(in.defined() && in.dim() == 4 && in.dtype() == DType::f32, "pad_images: data set '",
        data.name, "' needs float32 images (N, H, W, C)");
  const int64_t n = in.size(0), height = in.size(1), width = in.size(2), c = in.size(3);
  check(side >= height && side >= width, "pad_images: side ", side, " is smaller than the ",
        height, "x", width, " images of '", data.name, "'");
  const int64_t top = (side - height) / 2, left = (side - width) / 2;
  Dataset out = data;
  out.images = Tensor::empty({n, side, side, c}, DType::f32);
  const float pad = data.pad_value();
  const float* src = in.data<float>();
  float* dst = out.images.data<float>();
  parallel_for(n, 16, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float* image = dst + i * side * side * c;
      std::fill(image, image + side * side * c, pad);
      for (int64_t y = 0; y < height; ++y)
        std::copy_n(src + ((i * height + y) * width) * c, width * c,
                    image + ((top + y) * side + left) * c);
    }
  });
  return out;
}

}  // namespace vg::data
