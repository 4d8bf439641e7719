#include "engine/data/random_erasing.h"

#include <doctest/doctest.h>

#include <cmath>

#include "engine/core/error.h"

using namespace vg;
using namespace vg::data;

TEST_CASE("random erasing overwrites exactly its rectangle with the drawn fill") {
  std::vector<float> image(4 * 4, 1.0f);
  apply_erasing(image.data(), 4, 4, 1, {ErasedRect{1, 2, 2, 1, {5.0f, 6.0f}}});
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 4; ++x) {
      INFO("pixel ", y, ",", x);
      const float want = (x == 2 && y == 1) ? 5.0f : (x == 2 && y == 2) ? 6.0f : 1.0f;
      CHECK(image[y * 4 + x] == want);
    }
  // Two channels, one colour per channel ("rand"), and zeros ("const").
  std::vector<float> rgb(3 * 3 * 2, 1.0f);
  apply_erasing(rgb.data(), 3, 3, 2, {ErasedRect{0, 0, 1, 2, {7.0f, 8.0f}}});
  CHECK(rgb[0] == 7.0f);
  CHECK(rgb[1] == 8.0f);
  CHECK(rgb[2] == 7.0f);
  CHECK(rgb[3] == 8.0f);
  CHECK(rgb[4] == 1.0f);
  apply_erasing(rgb.data(), 3, 3, 2, {ErasedRect{2, 2, 1, 1, {}}});
  CHECK(rgb[16] == 0.0f);
  CHECK(rgb[17] == 0.0f);
}

TEST_CASE("random erasing draws in timm's order and its sides follow the area and aspect") {
  RandomErasingConfig c;
  c.prob = 1;
  Rng rng(21), replay(21);
  const std::vector<ErasedRect> rects = draw_erasing(c, 28, 28, 1, rng);
  REQUIRE(rects.size() == 1);
  // Replay: erased at all?, then tries of (area share, log aspect) until the box fits.
  replay.uniform();
  for (;;) {
    const double area = replay.uniform(0.02, 1.0 / 3.0) * 784.0;
    const double aspect = std::exp(replay.uniform(std::log(0.3), -std::log(0.3)));
    const auto h = int64_t(std::nearbyint(std::sqrt(area * aspect)));
    const auto w = int64_t(std::nearbyint(std::sqrt(area / aspect)));
    if (h < 28 && w < 28) {
      CHECK(rects[0].height == h);
      CHECK(rects[0].width == w);
      break;
    }
  }
  CHECK(rects[0].top == int64_t(replay.below(uint64_t(28 - rects[0].height + 1))));
  CHECK(rects[0].left == int64_t(replay.below(uint64_t(28 - rects[0].width + 1))));
  REQUIRE(rects[0].fill.size() == size_t(rects[0].height * rects[0].width));
  CHECK(rects[0].fill[0] == float(replay.normal()));
}

TEST_CASE("erased rectangles stay inside the image with the configured area share") {
  RandomErasingConfig c;
  c.prob = 1;
  c.mode = "rand";
  Rng rng(2);
  int erased = 0;
  for (int i = 0; i < 500; ++i) {
    for (const ErasedRect& r : draw_erasing(c, 12, 10, 3, rng)) {
      ++erased;
      CHECK(r.top + r.height <= 12);
      CHECK(r.left + r.width <= 10);
      CHECK(r.height < 12);
      CHECK(r.width < 10);
      CHECK(r.fill.size() == 3);
      // At most a third of 120 pixels, each side rounded up by at most half a pixel:
      // (sqrt(40 a) + 0.5)(sqrt(40 / a) + 0.5) with the aspect a in [0.3, 1 / 0.3].
      CHECK(double(r.height * r.width) <= 40 + 0.5 * (std::sqrt(40 / 0.3) + std::sqrt(12.0)) + 0.25);
      CHECK(r.height >= 1);  // at least 2% of 120 pixels: sides round(>= 0.85)
      CHECK(r.width >= 1);
    }
  }
  CHECK(erased > 450);  // ten tries almost always find a box that fits
  c.prob = 0;
  Rng untouched(2), before(2);
  CHECK(draw_erasing(c, 12, 10, 3, untouched).empty());
  CHECK(untouched.state() == before.state());  // off: no draw at all
}

TEST_CASE("bad random erasing input is one clear error") {
  RandomErasingConfig c;
  c.prob = 0.25;
  c.mode = "noise";
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("mode must be pixel, rand or const, got 'noise'"),
                       Error);
  c.mode = "pixel";
  c.min_area = 0.5;
  c.max_area = 0.4;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("0 < min_area <= max_area <= 1"), Error);
  std::vector<float> image(16);
  CHECK_THROWS_WITH_AS(apply_erasing(image.data(), 4, 4, 1, {ErasedRect{3, 0, 2, 1, {}}}),
                       doctest::Contains("rows [3, 5) columns [0, 1) is outside the 4x4 image"),
                       Error);
}
