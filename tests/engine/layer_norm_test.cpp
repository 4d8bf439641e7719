#include <doctest/doctest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/ops/norm_parts.h"
#include "tests/engine/gradcheck_helpers.h"
#include "tests/engine/nn_references.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::row_sums;
using vg::testing::variable;

TEST_CASE("layer_norm of a constant row gives the bias") {
  Tensor x = full({2, 4}, 3.5, DType::f64);
  Tensor w = from_vector(std::vector<double>{1, 2, 3, 4}, {4});
  Tensor b = from_vector(std::vector<double>{0.5, -1, 2, 0}, {4});
  CHECK(layer_norm(x, w, b).to_vector() == std::vector<double>{0.5, -1, 2, 0, 0.5, -1, 2, 0});
}

TEST_CASE("layer_norm matches a hand computation") {
  // mean 2.5, biased variance 1.25, eps inside the sqrt
  Tensor x = from_vector(std::vector<double>{1, 2, 3, 4}, {1, 4});
  Tensor w = from_vector(std::vector<double>{1, 2, -1, 0.5}, {4});
  Tensor b = from_vector(std::vector<double>{0, 1, 0, -2}, {4});
  const double r = 1 / std::sqrt(1.25 + 1e-6);
  const std::vector<double> want{-1.5 * r, 2 * -0.5 * r + 1, -0.5 * r, 0.5 * 1.5 * r - 2};
  for (DType dt : {DType::f64, DType::f32}) {
    const std::vector<double> y = layer_norm(x.to(dt), w.to(dt), b.to(dt), 1e-6).to_vector();
    for (int i = 0; i < 4; ++i) CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
  // far from zero the two-pass variance keeps full precision
  Tensor shifted = from_vector(std::vector<double>{1e6 + 1, 1e6 + 2, 1e6 + 3, 1e6 + 4}, {1, 4});
  const std::vector<double> y = layer_norm(shifted, Tensor(), Tensor(), 1e-6).to_vector();
  CHECK(y[0] == doctest::Approx(-1.5 * r).epsilon(1e-9));
}

TEST_CASE("layer_norm rows of dx sum to zero and are orthogonal to x-hat") {
  Tensor x = variable({5, 7}, 4, 2.0), w = variable({7}, 5), b = variable({7}, 6);
  Tensor dy = variable({5, 7}, 7).detach();
  // Sum(dx * xhat) = r * eps / (var + eps) * sum(g * xhat): exactly zero only for eps = 0.
  layer_norm(x, w, b, 0.0).backward(dy);
  Tensor xhat = layer_norm(x.detach(), Tensor(), Tensor(), 0.0);
  for (double s : row_sums(x.grad())) CHECK(std::fabs(s) < 1e-12);
  for (double s : row_sums(x.grad() * xhat)) CHECK(std::fabs(s) < 1e-12);
}

TEST_CASE("layer_norm passes gradcheck for x, weight and bias on 2-D, 3-D and 4-D inputs") {
  for (const Shape& shape : {Shape{5, 6}, Shape{2, 3, 4}, Shape{2, 2, 3, 4}}) {
    const int64_t C = shape.back();
    Tensor x = variable(shape, 8), w = variable({C}, 9, 1.0), b = variable({C}, 10);
    for (int with = 0; with < 4; ++with) {
      Tensor wi = with & 1 ? w : Tensor(), bi = with & 2 ? b : Tensor();
      INFO("shape ", shape_str(shape), " weight ", wi.defined(), " bias ", bi.defined());
      expect_gradients("layer_norm", [](auto& in) { return layer_norm(in[0], in[1], in[2], 1e-6); },
                       {x, wi, bi});
    }
  }
}

TEST_CASE("layer_norm's values made again from its stats have its bits; stats of other rows fail") {
  // What layer_norm_linear's backward does in fp32: the forward's (mean, rstd) per row, then
  // the values from them in one pass. Float and double, with and without weight and bias.
  Rng rng(8);
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor x = (randn({5, 7, 12}, rng) * 3.0 + 1.0).to(dt);
    const Tensor w = randn({12}, rng).to(dt), b = randn({12}, rng).to(dt);
    for (bool affine : {true, false}) {
      CAPTURE(dtype_name(dt));
      CAPTURE(affine);
      const Tensor wp = affine ? w : Tensor(), bp = affine ? b : Tensor();
      std::vector<double> stats;
      const Tensor y = detail::layer_norm_values(x, wp, bp, 1e-5, stats);
      const Tensor again = detail::layer_norm_values_again(x, wp, bp, stats);
      CHECK(again.to_vector() == y.to_vector());
      stats.resize(stats.size() - 2);
      CHECK_THROWS_WITH_AS(detail::layer_norm_values_again(x, wp, bp, stats),
                           "layer_norm: 34 rows' stats for 35 rows (input shape [5,7,12])", Error);
    }
  }
}

TEST_CASE("layer_norm's values made a block at a time have its bits and leave its stats") {
  // What layer_norm_linear's forward hands its product in fp32: rows made on demand, each
  // block's stats written as its rows are made. Blocks of rows of several sizes, whole rows and
  // some columns of them (which make the whole rows first), with and without weight and bias.
  Rng rng(9);
  const Tensor x = randn({3, 11, 20}, rng) * 2.0 - 0.5;
  const Tensor w = randn({20}, rng), b = randn({20}, rng);
  for (bool affine : {true, false}) {
    CAPTURE(affine);
    const Tensor wp = affine ? w : Tensor(), bp = affine ? b : Tensor();
    std::vector<double> want_stats, stats;
    const std::vector<double> want =
        detail::layer_norm_values(x, wp, bp, 1e-6, want_stats).to_vector();
    const MadeRows made = detail::layer_norm_made(x, wp, bp, 1e-6, stats);
    REQUIRE(made.rows == 33);
    REQUIRE(made.cols == 20);
    std::vector<float> block(33 * 20);
    int64_t wrong = 0;
    for (const auto& [r0, r1, c0, c1] : {std::tuple{0, 8, 0, 20}, std::tuple{8, 9, 0, 20},
                                         std::tuple{9, 33, 0, 20}, std::tuple{3, 10, 5, 17}}) {
      made.fill(r0, r1, c0, c1, block.data());
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          wrong += block[(r - r0) * (c1 - c0) + (c - c0)] != float(want[r * 20 + c]);
    }
    CHECK(wrong == 0);
    CHECK(stats == want_stats);
  }
  std::vector<double> unused;
  CHECK_THROWS_WITH_AS(detail::layer_norm_made(x.to(DType::f64), Tensor(), Tensor(), 1e-6, unused),
                       "layer_norm: rows made on demand are float32, input is float64", Error);
}
