#include "engine/data/rand_augment.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "engine/core/error.h"

using namespace vg;
using namespace vg::data;

namespace {

std::vector<uint8_t> apply(std::vector<uint8_t> image, int64_t h, int64_t w, RandOp op,
                           double arg = 0, uint8_t fill = 0) {
  apply_rand_op(image, h, w, {op, arg}, fill);
  return image;
}

using Pixels = std::vector<uint8_t>;

}  // namespace

TEST_CASE("timm's rand policy string is read with its defaults") {
  const RandAugmentConfig c = parse_rand_augment("rand-m7-mstd0.5");
  CHECK(c.magnitude == 7);
  CHECK(c.magnitude_std == 0.5);
  CHECK(c.num_ops == 2);  // timm's default n
  CHECK(c.magnitude_max == 10);
  CHECK(c.prob == 0.5);
  const RandAugmentConfig d = parse_rand_augment("rand-n3-m9-mmax12-p1");
  CHECK(d.num_ops == 3);
  CHECK(d.magnitude == 9);
  CHECK(d.magnitude_max == 12);
  CHECK(d.prob == 1);
}

TEST_CASE("magnitudes become timm's arguments") {
  CHECK(rand_op_arg(RandOp::kRotate, 7) == doctest::Approx(21.0));
  CHECK(rand_op_arg(RandOp::kShearX, 7) == doctest::Approx(0.21));
  CHECK(rand_op_arg(RandOp::kTranslateYRel, 7) == doctest::Approx(0.315));
  CHECK(rand_op_arg(RandOp::kContrast, 7) == doctest::Approx(1.36));
  CHECK(rand_op_arg(RandOp::kBrightness, 0) == doctest::Approx(0.1));
  CHECK(rand_op_arg(RandOp::kPosterize, 7) == 2);     // int(2.8) bits kept
  CHECK(rand_op_arg(RandOp::kSolarize, 7) == 179);    // int(179.2)
  CHECK(rand_op_arg(RandOp::kSolarizeAdd, 7) == 77);  // int(77.0)
}

TEST_CASE("the grey-level operations give PIL's values") {
  const Pixels x = {0, 64, 128, 255};
  CHECK(apply(x, 2, 2, RandOp::kInvert) == Pixels{255, 191, 127, 0});
  CHECK(apply(x, 2, 2, RandOp::kPosterize, 2) == Pixels{0, 64, 128, 192});
  CHECK(apply(x, 2, 2, RandOp::kPosterize, 8) == x);
  CHECK(apply(x, 2, 2, RandOp::kSolarize, 128) == Pixels{0, 64, 127, 0});
  CHECK(apply(x, 2, 2, RandOp::kSolarizeAdd, 77) == Pixels{77, 141, 128, 255});
  CHECK(apply(x, 2, 2, RandOp::kBrightness, 0.5) == Pixels{0, 32, 64, 127});
  // Contrast blends with the rounded mean grey, 447 / 4 = 111.75 -> 112.
  CHECK(apply(x, 2, 2, RandOp::kContrast, 0) == Pixels{112, 112, 112, 112});
  CHECK(apply(x, 2, 2, RandOp::kContrast, 2) == Pixels{0, 16, 144, 255});
  // AutoContrast stretches 50..150 to 0..255: 100 -> trunc(100 * 2.55 - 127.5) = 127.
  CHECK(apply({50, 100, 150, 150}, 2, 2, RandOp::kAutoContrast) == Pixels{0, 127, 255, 255});
}

TEST_CASE("equalize spreads the histogram as PIL does") {
  // 255 pixels at level 10 and one at 20: step (256 - 1) / 255 = 1, so level 10 maps to the
  // pixels below it (0) and level 20 to the 255 below it.
  Pixels x(256, 10);
  x[7] = 20;
  const Pixels y = apply(x, 16, 16, RandOp::kEqualize);
  CHECK(y[0] == 0);
  CHECK(y[7] == 255);
  // Four distinct pixels: a step of 0, nothing to spread.
  CHECK(apply({0, 64, 128, 255}, 2, 2, RandOp::kEqualize) == Pixels{0, 64, 128, 255});
}

TEST_CASE("sharpness blends with PIL's 3x3 smoothing, borders kept") {
  Pixels x(9, 0);
  x[4] = 13;  // the smoothed centre is (4 * 13 + 13) / 13 = 5
  CHECK(apply(x, 3, 3, RandOp::kSharpness, 0) == Pixels{0, 0, 0, 0, 5, 0, 0, 0, 0});
  CHECK(apply(x, 3, 3, RandOp::kSharpness, 1) == x);
  CHECK(apply(x, 3, 3, RandOp::kSharpness, 2)[4] == 21);  // 5 + 2 (13 - 5)
}

TEST_CASE("geometric operations move pixels and fill what they uncover") {
  // A quarter of the width to the left: out(x) = in(x + 1), the last column filled.
  CHECK(apply({10, 20, 30, 40}, 1, 4, RandOp::kTranslateXRel, 0.25, 7) == Pixels{20, 30, 40, 7});
  CHECK(apply({10, 20, 30, 40}, 1, 4, RandOp::kTranslateXRel, -0.25, 7) == Pixels{7, 10, 20, 30});
  CHECK(apply({10, 20, 30, 40}, 4, 1, RandOp::kTranslateYRel, 0.5, 9) == Pixels{30, 40, 9, 9});
  // 90 degrees counter-clockwise: rows [1 2] [3 4] become [2 4] [1 3].
  CHECK(apply({1, 2, 3, 4}, 2, 2, RandOp::kRotate, 90) == Pixels{2, 4, 1, 3});
  // ShearX 1: out(x, y) = in(x + y + 1/2) between pixel centres, bilinear, fill 0:
  // row 0: (0 + 100) / 2, (100 + 0) / 2; row 1: (40 + 0) / 2, fill.
  CHECK(apply({0, 100, 200, 40}, 2, 2, RandOp::kShearX, 1) == Pixels{50, 50, 20, 0});
  CHECK(apply({0, 100, 200, 40}, 2, 2, RandOp::kShearY, 0) == Pixels{0, 100, 200, 40});
}

TEST_CASE("an image's operations are drawn in timm's order") {
  RandAugmentConfig c = parse_rand_augment("rand-m7-mstd0.5");
  Rng rng(13), replay(13);
  const std::vector<RandOpCall> calls = draw_rand_augment(c, rng);
  const auto first = static_cast<RandOp>(replay.below(kNumRandOps));
  const auto second = static_cast<RandOp>(replay.below(kNumRandOps));
  std::vector<RandOpCall> want;
  for (RandOp op : {first, second}) {
    if (replay.uniform() > 0.5) continue;
    const double m = std::clamp(replay.normal(7, 0.5), 0.0, 10.0);
    double arg = rand_op_arg(op, m);
    if ((op >= RandOp::kRotate) && replay.uniform() > 0.5) arg = -arg;
    want.push_back({op, arg});
  }
  REQUIRE(calls.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(calls[i].op == want[i].op);
    CHECK(calls[i].arg == want[i].arg);
  }
  CHECK(rng.state() == replay.state());
  // Over many images every one of the 14 operations turns up, and p = 1 applies them all.
  c.prob = 1;
  std::set<int> seen;
  for (int i = 0; i < 200; ++i) {
    const std::vector<RandOpCall> all = draw_rand_augment(c, rng);
    CHECK(all.size() == 2);
    for (const RandOpCall& call : all) seen.insert(static_cast<int>(call.op));
  }
  CHECK(seen.size() == kNumRandOps);
}

TEST_CASE("a RandAugment string timm reads differently or not at all is one clear error") {
  CHECK_THROWS_WITH_AS(parse_rand_augment("augmix-m5"),
                       doctest::Contains("only timm's 'rand' policy is supported"), Error);
  CHECK_THROWS_WITH_AS(parse_rand_augment("rand-m7-inc1"),
                       doctest::Contains("unknown or unsupported key 'inc'"), Error);
  CHECK_THROWS_WITH_AS(parse_rand_augment("rand-m"),
                       doctest::Contains("part 'm' needs a number after its key"), Error);
  CHECK_THROWS_WITH_AS(parse_rand_augment("rand-p2"), doctest::Contains("0 <= p <= 1"), Error);
  Pixels short_image(3);
  CHECK_THROWS_WITH_AS(apply_rand_op(short_image, 2, 2, {RandOp::kInvert, 0}, 0),
                       doctest::Contains("apply_rand_op(Invert): 3 pixels for a 2x2 image"),
                       Error);
}
