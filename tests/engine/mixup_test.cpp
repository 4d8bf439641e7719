#include "engine/data/mixup.h"

#include <doctest/doctest.h>

#include <cmath>

#include "engine/core/error.h"

using namespace vg;
using namespace vg::data;

namespace {

// n images of side x side x 1 whose pixel (y, x) of image i is 100 i + side y + x.
Tensor numbered_images(int64_t n, int64_t side) {
  Tensor t = Tensor::empty({n, side, side, 1}, DType::f32);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = float(100 * (i / (side * side)) + i % (side * side));
  return t;
}

float pixel(const Tensor& t, int64_t i, int64_t y, int64_t x) {
  return t.data<float>()[(i * t.size(1) + y) * t.size(2) + x];
}

struct Moments {
  double mean = 0, var = 0;
};
Moments beta_moments(double a, double b, int n) {
  Rng rng(5);
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double v = sample_beta(rng, a, b);
    REQUIRE(v >= 0.0);
    REQUIRE(v <= 1.0);
    sum += v;
    sum_sq += v * v;
  }
  const double mean = sum / n;
  return {mean, sum_sq / n - mean * mean};
}

}  // namespace

TEST_CASE("soft targets carry lambda and the smoothing, and every row sums to 1") {
  // K = 4, s = 0.1: off = s/K = 0.025, on = 1 - s + off = 0.925. Sample i's partner is
  // sample n-1-i; the middle of an odd batch is its own partner.
  const Tensor t = mixup_targets({0, 2, 1}, 4, 0.7, 0.1);
  REQUIRE(t.shape() == Shape{3, 4});
  const std::vector<double> want = {0.7 * 0.925 + 0.3 * 0.025, 0.7 * 0.025 + 0.3 * 0.925, 0.025,
                                    0.025,  // 0.655, 0.295: label 0 mixed with label 1
                                    0.025, 0.025, 0.925, 0.025,  // label 2 with itself
                                    0.295, 0.655, 0.025, 0.025};
  for (int64_t k = 0; k < 12; ++k) {
    INFO("element ", k);
    CHECK(t.data<float>()[k] == doctest::Approx(want[k]).epsilon(1e-7));
  }
  CHECK(want[0] == doctest::Approx(0.655));
  for (int64_t i = 0; i < 3; ++i) {
    double sum = 0;
    for (int64_t k = 0; k < 4; ++k) sum += t.data<float>()[i * 4 + k];
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  }
  // lambda 1 and no smoothing: the one-hot labels.
  const Tensor hard = mixup_targets({3, 1}, 4, 1.0, 0.0);
  CHECK(hard.data<float>()[3] == 1.0f);
  CHECK(hard.data<float>()[0] == 0.0f);
  CHECK(hard.data<float>()[5] == 1.0f);
}

TEST_CASE("the cutmix box has sides int(side * sqrt(1 - lambda)), centred and clipped") {
  // lambda 0.75 on 4x4: sqrt(0.25) = 0.5, sides 2, one row and column on either side.
  CHECK(cutmix_box_at(0.75, 4, 4, 1, 2) == CutmixBox{0, 2, 1, 3});
  // A centre in the corner: the box is clipped to one pixel, so the pasted share is 1/16.
  const CutmixBox corner = cutmix_box_at(0.75, 4, 4, 0, 0);
  CHECK(corner == CutmixBox{0, 1, 0, 1});
  CHECK(corner.area() == 1);
  // lambda 0 on 5x5: the cut is 5 wide, but halves of 2 on each side give a box of 4.
  CHECK(cutmix_box_at(0.0, 5, 5, 2, 2) == CutmixBox{0, 4, 0, 4});
  // Non-square: 4 rows, 8 columns, lambda 0.75: 2 rows and 4 columns.
  CHECK(cutmix_box_at(0.75, 4, 8, 2, 4) == CutmixBox{1, 3, 2, 6});
}

TEST_CASE("cutmix pastes the partner's box from the original images") {
  Tensor x = numbered_images(2, 4);
  MixParams p;
  p.cutmix = true;
  p.box = {0, 2, 1, 3};
  p.lam = 0.75;
  mix_images(x, p);
  CHECK(pixel(x, 0, 0, 1) == 101.0f);  // image 1's pixel (0, 1)
  CHECK(pixel(x, 0, 1, 2) == 106.0f);
  CHECK(pixel(x, 0, 0, 0) == 0.0f);    // outside the box: unchanged
  CHECK(pixel(x, 0, 2, 1) == 9.0f);
  CHECK(pixel(x, 1, 0, 1) == 1.0f);    // image 0's original pixel, not the pasted one
  CHECK(pixel(x, 1, 1, 2) == 6.0f);
  CHECK(pixel(x, 1, 3, 3) == 115.0f);
}

TEST_CASE("mixup blends every image with its reversed partner") {
  Tensor x = numbered_images(3, 2);  // images 0..3, 100..103, 200..203
  mix_images(x, MixParams{0.25, false, {}});
  CHECK(pixel(x, 0, 0, 0) == 0.25f * 0 + 0.75f * 200);
  CHECK(pixel(x, 0, 1, 1) == 0.25f * 3 + 0.75f * 203);
  CHECK(pixel(x, 2, 0, 1) == 0.25f * 201 + 0.75f * 1);
  CHECK(pixel(x, 1, 1, 0) == 102.0f);  // the middle image with itself
  Tensor same = numbered_images(2, 2);
  mix_images(same, MixParams{1.0, false, {}});  // lambda 1 changes nothing
  CHECK(pixel(same, 1, 1, 1) == 103.0f);
}

TEST_CASE("Beta samples have the moments of the distribution, also for small alpha") {
  // Beta(a, a): mean 1/2, variance 1 / (4 (2a + 1)); Beta(2, 5): mean 2/7, variance 10/392.
  const Moments small = beta_moments(0.1, 0.1, 40000);
  CHECK(small.mean == doctest::Approx(0.5).epsilon(0.02));
  CHECK(small.var == doctest::Approx(1.0 / 4.8).epsilon(0.03));
  const Moments uniform = beta_moments(1, 1, 40000);
  CHECK(uniform.mean == doctest::Approx(0.5).epsilon(0.02));
  CHECK(uniform.var == doctest::Approx(1.0 / 12).epsilon(0.03));
  const Moments skewed = beta_moments(2, 5, 40000);
  CHECK(skewed.mean == doctest::Approx(2.0 / 7).epsilon(0.02));
  CHECK(skewed.var == doctest::Approx(10.0 / 392).epsilon(0.04));
}

TEST_CASE("a batch's mixing draws come in timm's order from the given generator") {
  MixupConfig c;
  c.num_classes = 10;
  c.mixup_alpha = 0.1;
  c.cutmix_alpha = 1.0;
  SUBCASE("switch probability 1: always cutmix, lambda from the box actually pasted") {
    c.switch_prob = 1;
    Rng rng(7), replay(7);
    const MixParams p = draw_mix_params(c, 28, 28, rng);
    CHECK(p.cutmix);
    replay.uniform();  // mixed at all?
    replay.uniform();  // cutmix or mixup?
    const double lam0 = sample_beta(replay, 1.0, 1.0);
    const int64_t cy = int64_t(replay.below(28)), cx = int64_t(replay.below(28));
    CHECK(p.box == cutmix_box_at(lam0, 28, 28, cy, cx));
    CHECK(p.lam == 1.0 - double(p.box.area()) / 784.0);
    CHECK(rng.state() == replay.state());
  }
  SUBCASE("switch probability 0: always mixup, lambda from Beta(mixup_alpha)") {
    c.switch_prob = 0;
    Rng rng(7), replay(7);
    const MixParams p = draw_mix_params(c, 28, 28, rng);
    CHECK_FALSE(p.cutmix);
    replay.uniform();
    replay.uniform();
    CHECK(p.lam == sample_beta(replay, 0.1, 0.1));
    CHECK(rng.state() == replay.state());
  }
  SUBCASE("probability 0: one draw, lambda 1") {
    c.prob = 0;
    Rng rng(7), replay(7);
    const MixParams p = draw_mix_params(c, 28, 28, rng);
    CHECK(p.lam == 1.0);
    replay.uniform();
    CHECK(rng.state() == replay.state());
  }
  SUBCASE("cutmix alone needs no switch draw") {
    c.mixup_alpha = 0;
    Rng rng(3);
    int cut = 0;
    for (int i = 0; i < 20; ++i) cut += draw_mix_params(c, 8, 8, rng).cutmix;
    CHECK(cut == 20);
  }
}

TEST_CASE("bad mixup input is one clear error") {
  CHECK_THROWS_WITH_AS(mixup_targets({0, 4}, 4, 0.5, 0.1),
                       doctest::Contains("label 4 at index 1 is outside [0, 4)"), Error);
  MixupConfig c;
  c.mixup_alpha = 0.8;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("num_classes must be positive"), Error);
  c.num_classes = 10;
  c.switch_prob = 1.5;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("switch_prob must be in [0, 1], got 1.5"),
                       Error);
  Tensor flat = Tensor::empty({2, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(mix_images(flat, MixParams{0.5, false, {}}),
                       doctest::Contains("needs float32 images (n, H, W, C), got [2,4]"), Error);
}
