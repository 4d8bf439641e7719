// The fused ops of the normalisation layers (engine/ops/norm.cpp), each compared with a plain
// op-by-op reference and checked by finite differences.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::variable;

namespace {

// GRN op by op, as ConvNeXt V2 writes it; its gradient has no zero-norm mask, so it is
// compared only where every norm is positive.
Tensor grn_reference(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  Axes spatial;
  for (int64_t i = 1; i + 1 < x.dim(); ++i) spatial.push_back(i);
  const Tensor g = sqrt(sum(mul(x, x), spatial, true));
  const Tensor n = div(g, add(mean(g, {-1}, true), eps));
  return add(add(mul(gamma, mul(x, n)), beta), x);
}

// gradcheck with step 1e-5: at the default 1e-6 the rounding noise of the projected
// objective (about 1e-16 * |L| / step) alone reaches 1e-6 relative on ~100-element outputs.
void expect_gradients_at_step(const std::string& what, const TensorFunction& fn,
                              const std::vector<Tensor>& inputs, double step = 1e-5) {
  GradcheckOptions options;
  options.eps = step;
  vg::testing::expect_passed(what, gradcheck(fn, inputs, options));
}

// The largest |a - b| over two tensors of one shape.
double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<double> va = a.to_vector(), vb = b.to_vector();
  double worst = 0;
  for (size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::fabs(va[i] - vb[i]));
  return worst;
}

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace

// --- channel_affine -------------------------------------------------------------------------

TEST_CASE("channel_affine equals x * scale + shift and its gradients those of the plain ops") {
  const Tensor x = variable({2, 3, 4}, 1), s = variable({4}, 2), b = variable({4}, 3);
  const Tensor fused = channel_affine(x, s, b);
  // Equal up to rounding: the compiler may fuse the multiply-add (one rounding, not two).
  CHECK(max_abs_diff(fused, add(mul(x, s), b)) < 1e-15);
  CHECK(max_abs_diff(channel_affine(x, s), mul(x, s)) == 0);

  const Tensor R = variable({2, 3, 4}, 4).detach();
  sum(mul(channel_affine(x, s, b), R)).backward();
  const Tensor gx = x.grad(), gs = s.grad(), gb = b.grad();
  for (Tensor t : {x, s, b}) t.zero_grad();
  sum(mul(add(mul(x, s), b), R)).backward();
  CHECK(max_abs_diff(gx, x.grad()) < 1e-14);
  CHECK(max_abs_diff(gs, s.grad()) < 1e-14);
  CHECK(max_abs_diff(gb, b.grad()) < 1e-14);
}

TEST_CASE("channel_affine passes gradcheck from rank 1 (no broadcast) to rank 5") {
  const std::vector<Shape> shapes{{5}, {3, 5}, {2, 3, 5}, {2, 2, 3, 5}, {2, 1, 2, 3, 5}};
  for (const Shape& shape : shapes) {
    INFO("input shape ", shape_str(shape));
    const Tensor x = variable(shape, 10), s = variable({5}, 11), b = variable({5}, 12);
    expect_gradients_at_step("channel_affine with shift",
                             [](auto& in) { return channel_affine(in[0], in[1], in[2]); },
                             {x, s, b});
    expect_gradients_at_step("channel_affine without shift",
                             [](auto& in) { return channel_affine(in[0], in[1]); }, {x, s});
  }
}

TEST_CASE("channel_affine skips the gradients nobody needs") {
  const Tensor x = variable({3, 4}, 20).detach(), s = variable({4}, 21);
  sum(channel_affine(x, s)).backward();
  CHECK(s.grad().defined());
  CHECK(!x.grad().defined());
  NoGradGuard no_grad;
  CHECK(!channel_affine(x, s).grad_fn());
}

TEST_CASE("channel_affine gradients have the same bits at 1 and 2 threads") {
  const Tensor x = variable({64, 50, 96}, 30).detach().to(DType::f32).set_requires_grad();
  const Tensor s = variable({96}, 31).detach().to(DType::f32).set_requires_grad();
  const Tensor b = variable({96}, 32).detach().to(DType::f32).set_requires_grad();
  auto grads = [&](int threads) {
    set_num_threads(threads);
    for (Tensor t : {x, s, b}) t.zero_grad();
    channel_affine(x, s, b).backward(ones(x.shape()));
    return std::vector<std::vector<double>>{x.grad().to_vector(), s.grad().to_vector(),
                                            b.grad().to_vector()};
  };
  const auto one = grads(1), two = grads(2);
  CHECK(one == two);
}

TEST_CASE("channel_affine rejects scale or shift of the wrong shape or dtype") {
  const Tensor x = zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(channel_affine(x, zeros({3})),
                       "channel_affine: scale has shape [3], expected [4] for input shape [2,3,4]",
                       Error);
  CHECK_THROWS_WITH_AS(channel_affine(x, zeros({4}), zeros({1, 4})),
                       doctest::Contains("channel_affine: shift has shape [1,4]"), Error);
  CHECK_THROWS_WITH_AS(channel_affine(x, zeros({4}, DType::f64)),
                       doctest::Contains("scale is float64 but the input is float32"), Error);
}

TEST_CASE("channel_affine counts one FLOP per element, two with a shift") {
  const Tensor x = zeros({2, 3, 4});
  FlopCounter scale_only;
  channel_affine(x, ones({4}));
  CHECK(scale_only.total() == 24);
  FlopCounter with_shift;
  channel_affine(x, ones({4}), zeros({4}));
  CHECK(with_shift.total() == 48);
}

// --- global_response_norm -------------------------------------------------------------------

TEST_CASE("global_response_norm matches the op-by-op reference in value and gradient") {
  const Tensor x = variable({2, 5, 6}, 40), gamma = variable({6}, 41), beta = variable({6}, 42);
  const Tensor fused = global_response_norm(x, gamma, beta, 1e-6);
  CHECK(max_abs_diff(fused, grn_reference(x, gamma, beta, 1e-6)) < 1e-13);

  const Tensor R = variable({2, 5, 6}, 43).detach();
  sum(mul(global_response_norm(x, gamma, beta, 1e-6), R)).backward();
  const Tensor gx = x.grad(), gg = gamma.grad(), gb = beta.grad();
  for (Tensor t : {x, gamma, beta}) t.zero_grad();
  sum(mul(grn_reference(x, gamma, beta, 1e-6), R)).backward();
  CHECK(max_abs_diff(gx, x.grad()) < 1e-12);
  CHECK(max_abs_diff(gg, gamma.grad()) < 1e-12);
  CHECK(max_abs_diff(gb, beta.grad()) < 1e-12);
}

TEST_CASE("global_response_norm passes gradcheck on 3-, 4- and 5-D inputs") {
  const std::vector<Shape> shapes{{1, 1, 4}, {3, 4, 5}, {2, 3, 3, 4}, {2, 2, 3, 2, 3}};
  for (const Shape& shape : shapes) {
    INFO("input shape ", shape_str(shape), (shape[0] == 1 && shape[1] == 1 ? " (one token)" : ""));
    const int64_t C = shape.back();
    const Tensor x = variable(shape, 50), gamma = variable({C}, 51), beta = variable({C}, 52);
    expect_gradients_at_step(
        "global_response_norm",
        [](auto& in) { return global_response_norm(in[0], in[1], in[2], 1e-6); }, {x, gamma, beta});
  }
}

TEST_CASE("global_response_norm masks x/g where a channel's norm is zero") {
  // Sample 0, channel 2 is zero at every token; the other norms are large, so the central
  // difference across the kink of the norm stays below the tolerance.
  Tensor x = variable({2, 4, 3}, 60).detach();
  for (int64_t t = 0; t < 4; ++t) x.set_at({0, t, 2}, 0.0);
  x = mul(x, 3.0).set_requires_grad();
  const Tensor gamma = variable({3}, 61), beta = variable({3}, 62);
  // Step 1e-6: the error across the kink grows with the step (about gamma * step / mu).
  expect_gradients_at_step(
      "global_response_norm with a zero channel",
      [](auto& in) { return global_response_norm(in[0], in[1], in[2], 1e-6); }, {x, gamma, beta},
      1e-6);

  const Tensor G = variable({2, 4, 3}, 63).detach();
  x.zero_grad();
  global_response_norm(x, gamma, beta, 1e-6).backward(G);
  REQUIRE(all_finite(x.grad()));
  // n = 0 for the zero channel, and the norm path is masked: dx = G there.
  for (int64_t t = 0; t < 4; ++t) CHECK(x.grad().at({0, t, 2}) == G.at({0, t, 2}));
}

TEST_CASE("global_response_norm on an all-zero sample gives beta and a finite gradient") {
  Tensor x = variable({2, 3, 4}, 70).detach();
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t c = 0; c < 4; ++c) x.set_at({1, t, c}, 0.0);
  x.set_requires_grad();
  const Tensor gamma = variable({4}, 71), beta = variable({4}, 72);
  const Tensor y = global_response_norm(x, gamma, beta, 1e-6);
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t c = 0; c < 4; ++c) CHECK(y.at({1, t, c}) == beta.at({c}));
  const Tensor G = variable({2, 3, 4}, 73).detach();
  y.backward(G);
  REQUIRE(all_finite(x.grad()));
  REQUIRE(all_finite(gamma.grad()));
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t c = 0; c < 4; ++c) CHECK(x.grad().at({1, t, c}) == G.at({1, t, c}));
}

TEST_CASE("global_response_norm gradients have the same bits at 1 and 2 threads") {
  const Tensor x = variable({32, 49, 256}, 80).detach().to(DType::f32).set_requires_grad();
  const Tensor gamma = variable({256}, 81).detach().to(DType::f32).set_requires_grad();
  const Tensor beta = variable({256}, 82).detach().to(DType::f32).set_requires_grad();
  const Tensor G = variable({32, 49, 256}, 83).detach().to(DType::f32);
  auto run = [&](int threads) {
    set_num_threads(threads);
    for (Tensor t : {x, gamma, beta}) t.zero_grad();
    const Tensor y = global_response_norm(x, gamma, beta, 1e-6);
    const std::vector<double> values = y.to_vector();
    y.backward(G);
    return std::vector<std::vector<double>>{values, x.grad().to_vector(), gamma.grad().to_vector(),
                                            beta.grad().to_vector()};
  };
  const auto one = run(1), two = run(2);
  CHECK(one == two);
}

TEST_CASE("global_response_norm rejects inputs without a spatial axis and foreign parameters") {
  CHECK_THROWS_WITH_AS(global_response_norm(zeros({8, 4}), zeros({4}), zeros({4}), 1e-6),
                       "global_response_norm: input must be (B, spatial..., C) with at least one "
                       "spatial axis, got shape [8,4]",
                       Error);
  CHECK_THROWS_WITH_AS(global_response_norm(zeros({2, 3, 4}), zeros({5}), zeros({4}), 1e-6),
                       "global_response_norm: gamma has shape [5], expected [4] for input shape "
                       "[2,3,4]",
                       Error);
  CHECK_THROWS_WITH_AS(
      global_response_norm(zeros({2, 3, 4}), zeros({4}), zeros({4}, DType::f64), 1e-6),
      doctest::Contains("beta is float64 but the input is float32"), Error);
}

TEST_CASE("global_response_norm counts 6 FLOPs per element") {
  FlopCounter flops;
  global_response_norm(zeros({2, 7, 5}), zeros({5}), zeros({5}), 1e-6);
  CHECK(flops.total() == 6 * 2 * 7 * 5);
}
