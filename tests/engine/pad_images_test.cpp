#include "engine/data/pad_images.h"

#include <doctest/doctest.h>

#include "engine/core/error.h"

using namespace vg;
using namespace vg::data;

TEST_CASE("pad_images centres the images in black, the odd margin's extra row last") {
  Tensor images = Tensor::empty({1, 2, 2, 1}, DType::f32);
  for (int64_t k = 0; k < 4; ++k) images.data<float>()[k] = float(k + 1);
  // black is (0 - 0.5) / 0.25 = -2
  const TensorDataset d(images, {0}, 1, {{0.5}, {0.25}}, "four");
  const TensorDataset p = pad_images(d, 5);
  REQUIRE(p.images().shape() == Shape{1, 5, 5, 1});
  const float* x = p.images().data<float>();
  CHECK(x[1 * 5 + 1] == 1.0f);  // margin 3: one row and column before, two after
  CHECK(x[1 * 5 + 2] == 2.0f);
  CHECK(x[2 * 5 + 1] == 3.0f);
  CHECK(x[2 * 5 + 2] == 4.0f);
  CHECK(x[0] == -2.0f);
  CHECK(x[4 * 5 + 4] == -2.0f);
  CHECK(x[3 * 5 + 2] == -2.0f);
  CHECK(p.labels() == d.labels());
  CHECK(p.normalisation() == d.normalisation());
  CHECK_THROWS_WITH_AS(pad_images(d, 1), doctest::Contains("side 1 is smaller than the 2x2"),
                       Error);
}

TEST_CASE("pad_images makes non-square colour images square, black on every channel") {
  // One 1x2 image of 2 channels: pixels (1, 2) and (3, 4); black is (-1, -3).
  Tensor images = Tensor::empty({1, 1, 2, 2}, DType::f32);
  for (int64_t k = 0; k < 4; ++k) images.data<float>()[k] = float(k + 1);
  const TensorDataset d(images, {0}, 1, {{0.5, 0.75}, {0.5, 0.25}}, "wide");
  const TensorDataset p = pad_images(d, 2);
  REQUIRE(p.images().shape() == Shape{1, 2, 2, 2});
  // The image's row comes first (an odd margin's extra row goes last), then a black row.
  CHECK(p.images().to_vector() == std::vector<double>{1, 2, 3, 4, -1, -3, -1, -3});
}
