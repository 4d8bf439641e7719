#include "engine/data/pad_images.h"

#include <doctest/doctest.h>

#include "engine/core/error.h"

using namespace vg;
using namespace vg::data;

TEST_CASE("pad_images centres the images in black, the odd margin's extra row last") {
  Dataset d;
  d.mean = 0.5;
  d.std = 0.25;  // black is (0 - 0.5) / 0.25 = -2
  d.images = Tensor::empty({1, 2, 2, 1}, DType::f32);
  for (int64_t k = 0; k < 4; ++k) d.images.data<float>()[k] = float(k + 1);
  d.labels = {0};
  d.num_classes = 1;
  const Dataset p = pad_images(d, 5);
  REQUIRE(p.images.shape() == Shape{1, 5, 5, 1});
  const float* x = p.images.data<float>();
  CHECK(x[1 * 5 + 1] == 1.0f);  // margin 3: one row and column before, two after
  CHECK(x[1 * 5 + 2] == 2.0f);
  CHECK(x[2 * 5 + 1] == 3.0f);
  CHECK(x[2 * 5 + 2] == 4.0f);
  CHECK(x[0] == -2.0f);
  CHECK(x[4 * 5 + 4] == -2.0f);
  CHECK(x[3 * 5 + 2] == -2.0f);
  CHECK(p.labels == d.labels);
  CHECK_THROWS_WITH_AS(pad_images(d, 1), doctest::Contains("side 1 is smaller than the 2x2"),
                       Error);
}
