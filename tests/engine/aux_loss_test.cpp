#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "engine/core/error.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::variable;

namespace {

Tensor leaf(const std::vector<double>& v, const Shape& shape) {
  return from_vector(v, shape).set_requires_grad();
}

// Smallest distance of any |x| from the threshold, and whether the largest |x| is unique:
// the gradcheck must stay away from the hinge's kink and from ties of the max.
bool smooth_for_hinge(const Tensor& x, double threshold, double margin) {
  const std::vector<double> v = x.to_vector();
  double top = -1, second = -1;
  for (double e : v) {
    if (std::fabs(std::fabs(e) - threshold) < margin) return false;
    const double a = std::fabs(e);
    if (a > top)
      second = top, top = a;
    else if (a > second)
      second = a;
  }
  return top - second > margin && top > threshold;
}

}  // namespace

TEST_CASE("feature_decay_loss is mean + max of |x| - t over the elements above t") {
  // danger: 50 and 100 (200 itself is not above the threshold).
  Tensor x = leaf({250, -300, 10, 199, 200, -200}, {2, 3});
  Tensor loss = feature_decay_loss(x, 200);
  CHECK(loss.item() == doctest::Approx(75.0 + 100.0));
  loss.backward();
  // 1/2 from the mean for both, 1 more from the max for -300, times sign(x).
  const std::vector<double> g = x.grad().to_vector();
  CHECK(g == std::vector<double>{0.5, -1.5, 0, 0, 0, 0});
}

TEST_CASE("feature_decay_loss is zero, with no gradient path, when nothing is above t") {
  Tensor x = leaf({1, -2, 3}, {3});
  Tensor loss = feature_decay_loss(x, 3);  // |3| == t is not above it
  CHECK(loss.item() == 0);
  CHECK_FALSE(loss.requires_grad());
}

TEST_CASE("feature_decay_loss spreads the max's gradient evenly over ties, like torch.max()") {
  Tensor x = leaf({300, -300, 250}, {3});
  Tensor loss = feature_decay_loss(x, 200);
  CHECK(loss.item() == doctest::Approx(250.0 / 3 + 100));
  loss.backward();
  const std::vector<double> g = x.grad().to_vector();
  CHECK(g[0] == doctest::Approx(1.0 / 3 + 0.5));
  CHECK(g[1] == doctest::Approx(-(1.0 / 3 + 0.5)));
  CHECK(g[2] == doctest::Approx(1.0 / 3));
}

TEST_CASE("feature_decay_loss: float64 gradient check away from the kink and from ties") {
  for (uint64_t seed : {1, 2, 3}) {
    Tensor x = variable({2, 5, 8}, seed) * 150.0;  // about a fifth of |x| above 200
    x = x.detach().set_requires_grad();
    REQUIRE(smooth_for_hinge(x, 200, 1e-2));
    expect_gradients("feature_decay_loss",
                     [](const std::vector<Tensor>& in) { return feature_decay_loss(in[0], 200); },
                     {x});
    // Composed with an op before it, as after a residual add.
    Tensor y = variable({2, 5, 8}, seed + 10);
    expect_gradients(
        "feature_decay_loss(x * y)",
        [](const std::vector<Tensor>& in) { return feature_decay_loss(in[0] * in[1], 100); },
        {x, y});
  }
}

TEST_CASE("feature_decay_loss works in float32 and rejects a bad threshold") {
  Tensor x = from_vector(std::vector<double>{5, -7}, {2}).to(DType::f32);
  CHECK(feature_decay_loss(x, 4).item() == doctest::Approx(2.0 + 3.0));
  CHECK_THROWS_WITH_AS(feature_decay_loss(x, -1), doctest::Contains("threshold"), Error);
  CHECK_THROWS_WITH_AS(feature_decay_loss(x, NAN), doctest::Contains("threshold"), Error);
}

TEST_CASE("attention_peak_loss is 1 - mean row max over the rows below the peak level") {
  Tensor p = leaf({0.7, 0.2, 0.1,    // peaked: left out
                   0.4, 0.35, 0.25,  // max 0.4
                   0.2, 0.45, 0.35,  // max 0.45
                   0.5, 0.3, 0.2},   // max exactly 0.5: not below the level, left out
                  {2, 2, 3});
  Tensor loss = attention_peak_loss(p);
  CHECK(loss.item() == doctest::Approx(1 - (0.4 + 0.45) / 2));
  loss.backward();
  std::vector<double> want(12, 0.0);
  want[3] = want[7] = -0.5;
  CHECK(p.grad().to_vector() == want);
}

TEST_CASE("attention_peak_loss sends a tied row's gradient to its first maximum") {
  Tensor p = leaf({0.4, 0.4, 0.2}, {1, 3});
  Tensor loss = attention_peak_loss(p);
  CHECK(loss.item() == doctest::Approx(0.6));
  loss.backward();
  CHECK(p.grad().to_vector() == std::vector<double>{-1, 0, 0});
}

TEST_CASE("attention_peak_loss is zero, with no gradient path, when every row is peaked") {
  Tensor p = leaf({0.9, 0.1, 0.6, 0.4}, {2, 2});
  Tensor loss = attention_peak_loss(p);
  CHECK(loss.item() == 0);
  CHECK_FALSE(loss.requires_grad());
  CHECK(attention_peak_loss(p, 0.95).item() == doctest::Approx(1 - 0.75));
}

TEST_CASE("attention_peak_loss: float64 gradient check through softmax") {
  // Scores of (B=2, H=2, T=5, T=5): most rows flat (max < 0.5), a few peaked by a large score.
  Tensor z = variable({2, 2, 5, 5}, 4) * 0.5;
  z = z.detach();
  for (int64_t i : {0, 7, 13}) z.data<double>()[i * 5 + 2] += 4.0;
  z.set_requires_grad();
  const Tensor probs = softmax(z.detach());
  int64_t bad = 0;
  for (int64_t r = 0; r < 20; ++r) {
    double top = 0, second = 0;
    for (int64_t j = 0; j < 5; ++j) {
      const double v = probs.data<double>()[r * 5 + j];
      if (v > top)
        second = top, top = v;
      else if (v > second)
        second = v;
    }
    REQUIRE(std::fabs(top - 0.5) > 1e-3);  // away from the level and from ties
    REQUIRE(top - second > 1e-3);
    bad += top < 0.5;
  }
  REQUIRE(bad > 3);
  REQUIRE(bad < 20);
  expect_gradients(
      "attention_peak_loss(softmax(z))",
      [](const std::vector<Tensor>& in) { return attention_peak_loss(softmax(in[0])); }, {z});
}

TEST_CASE("attention_peak_loss rejects an empty last axis") {
  CHECK_THROWS_WITH_AS(attention_peak_loss(zeros({2, 0}, DType::f64)),
                       doctest::Contains("attention_peak_loss"), Error);
}
