#include <doctest/doctest.h>

#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::variable;

TEST_CASE("patchify cuts row-major p x p patches, each flattened in (c, i, j) order") {
  // image[0, h, w, c] = (4h + w) * 2 + c on a 4x4x2 image, patch 2.
  const Tensor images = arange(32).reshape({1, 4, 4, 2});
  const Tensor patches = patchify(images, 2);
  REQUIRE(patches.shape() == Shape{1, 4, 8});
  // Patch 1 is row 0, column 1: pixels (0,2) (0,3) (1,2) (1,3), channel 0 first.
  CHECK(select(select(patches, 0, 0), 0, 1).to_vector() ==
        std::vector<double>{4, 6, 12, 14, 5, 7, 13, 15});
  CHECK(select(select(patches, 0, 0), 0, 2).to_vector() ==
        std::vector<double>{16, 18, 24, 26, 17, 19, 25, 27});
}

TEST_CASE("patchify handles rectangular images and keeps the dtype") {
  for (DType dtype : {DType::f32, DType::f64}) {
    const Tensor images = arange(2 * 4 * 6 * 3, dtype).reshape({2, 4, 6, 3});
    const Tensor patches = patchify(images, 2);
    REQUIRE(patches.shape() == Shape{2, 6, 12});
    CHECK(patches.dtype() == dtype);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t k = 0; k < 6; ++k)
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 2; ++j)
              CHECK(patches.at({b, k, (c * 2 + i) * 2 + j}) ==
                    images.at({b, (k / 3) * 2 + i, (k % 3) * 2 + j, c}));
  }
}

TEST_CASE("patchify passes gradcheck") {
  expect_gradients("patchify", [](auto& in) { return patchify(in[0], 2); },
                   {variable({2, 4, 6, 3}, 1)});
  expect_gradients("patchify, patch = image", [](auto& in) { return patchify(in[0], 3); },
                   {variable({1, 3, 3, 2}, 2)});
}

TEST_CASE("patchify rejects images that are not (B, H, W, C) or not divisible by p") {
  CHECK_THROWS_WITH_AS(patchify(zeros({4, 4, 2}), 2),
                       "patchify: images must be (B, H, W, C), got [4,4,2]", Error);
  CHECK_THROWS_WITH_AS(patchify(zeros({1, 6, 4, 1}), 4),
                       "patchify: image size 6x4 is not divisible by the patch size 4 (images "
                       "[1,6,4,1])",
                       Error);
  CHECK_THROWS_AS(patchify(zeros({1, 4, 4, 1}), 0), Error);
}
