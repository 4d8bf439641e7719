#include "layers/global_response_norm.h"

#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::GlobalResponseNorm;
using vg::testing::expect_module_gradients;
using vg::testing::randomize_parameters;
using vg::testing::variable;

namespace {

void set_values(const Tensor& t, const std::vector<double>& values) {
  REQUIRE(int64_t(values.size()) == t.numel());
  Tensor target = t;
  for (size_t i = 0; i < values.size(); ++i) target.data<double>()[i] = values[i];
}

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace

TEST_CASE("GRN has gamma and beta, zeros, without weight decay") {
  GlobalResponseNorm grn(16);
  const ParameterList params = grn.named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].name == "gamma");
  CHECK(params[1].name == "beta");
  for (const Parameter& p : params) {
    CHECK(p.no_weight_decay);
    CHECK(p.tensor.shape() == Shape{16});
    CHECK(p.tensor.to_vector() == std::vector<double>(16, 0.0));
  }
  CHECK(grn.eps() == 1e-6);
}

TEST_CASE("GRN with zero gamma and beta is the identity in value and gradient") {
  Rng rng(3);
  GlobalResponseNorm grn(64);
  for (const Shape& shape : {Shape{4, 49, 64}, Shape{2, 7, 7, 64}}) {
    INFO("input shape ", shape_str(shape));
    const Tensor x = randn(shape, rng).set_requires_grad();
    const Tensor dy = randn(shape, rng);
    const Tensor y = grn(x);
    CHECK(y.to_vector() == x.to_vector());
    grn.zero_grad();
    y.backward(dy);
    CHECK(x.grad().to_vector() == dy.to_vector());
    // Zero init still learns: d beta = sum dy and d gamma = sum dy * x * n are nonzero.
    CHECK(sum(abs(grn.beta().grad())).item() > 0);
    CHECK(sum(abs(grn.gamma().grad())).item() > 0);
  }
}

TEST_CASE(
    "GRN on x = [[1,2],[3,4]] (2 tokens x 2 channels): g = [3.16228, 4.47214], "
    "n = [0.828427, 1.171573]") {
  GlobalResponseNorm grn(2);
  grn.to(DType::f64);
  const Tensor x = from_vector(std::vector<double>{1, 2, 3, 4}, {1, 2, 2});
  // With gamma = 1 and beta = 0, y = x (1 + n), so n = y / x - 1.
  set_values(grn.gamma(), {1, 1});
  const Tensor y1 = grn(x);
  CHECK(y1.at({0, 0, 0}) / 1 - 1 == doctest::Approx(0.828427).epsilon(1e-6));
  CHECK(y1.at({0, 1, 0}) / 3 - 1 == doctest::Approx(0.828427).epsilon(1e-6));
  CHECK(y1.at({0, 0, 1}) / 2 - 1 == doctest::Approx(1.171573).epsilon(1e-6));
  CHECK(y1.at({0, 1, 1}) / 4 - 1 == doctest::Approx(1.171573).epsilon(1e-6));
  // g = [sqrt(10), sqrt(20)], mean 3.817207, so n = [0.8284271, 1.1715729] (2/(1+sqrt2) and
  // 2 sqrt2/(1+sqrt2)). By hand with gamma = [2, -1], beta = [0.5, 0.25]:
  //   y[0] = [2*1*0.828427 + 0.5 + 1, -1*2*1.171573 + 0.25 + 2] = [3.156854, -0.093146]
  //   y[1] = [2*3*0.828427 + 0.5 + 3, -1*4*1.171573 + 0.25 + 4] = [8.470563, -0.436292]
  set_values(grn.gamma(), {2, -1});
  set_values(grn.beta(), {0.5, 0.25});
  const std::vector<double> y = grn(x).to_vector();
  const std::vector<double> expected{3.156854, -0.093146, 8.470563, -0.436292};
  for (size_t i = 0; i < 4; ++i) CHECK(y[i] == doctest::Approx(expected[i]).epsilon(1e-5));
}

TEST_CASE("GRN on an all-zero sample gives beta and a finite gradient") {
  GlobalResponseNorm grn(4);
  grn.to(DType::f64);
  randomize_parameters(grn, 5);
  Tensor x = variable({2, 3, 4}, 6).detach();
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t c = 0; c < 4; ++c) x.set_at({0, t, c}, 0.0);
  x.set_requires_grad();
  const Tensor y = grn(x);
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t c = 0; c < 4; ++c) CHECK(y.at({0, t, c}) == grn.beta().at({c}));
  const Tensor dy = variable({2, 3, 4}, 7).detach();
  y.backward(dy);
  CHECK(all_finite(x.grad()));
  CHECK(all_finite(grn.gamma().grad()));
  CHECK(all_finite(grn.beta().grad()));
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t c = 0; c < 4; ++c) CHECK(x.grad().at({0, t, c}) == dy.at({0, t, c}));
}

TEST_CASE("GRN where one channel is zero in a sample: n = 0 there and the gradient is dy") {
  // g_c = 0 while the other channels are not: PyTorch's norm backward masks x / g to 0,
  // so nothing is NaN and dx = dy * (1 + gamma * n) = dy on that channel.
  GlobalResponseNorm grn(3);
  grn.to(DType::f64);
  randomize_parameters(grn, 11);
  Tensor x = variable({2, 4, 3}, 12).detach();
  for (int64_t t = 0; t < 4; ++t) x.set_at({1, t, 2}, 0.0);
  x.set_requires_grad();
  const Tensor y = grn(x);
  const Tensor dy = variable({2, 4, 3}, 13).detach();
  y.backward(dy);
  CHECK(all_finite(x.grad()));
  CHECK(all_finite(grn.gamma().grad()));
  for (int64_t t = 0; t < 4; ++t) {
    CHECK(y.at({1, t, 2}) == grn.beta().at({2}));
    CHECK(x.grad().at({1, t, 2}) == doctest::Approx(dy.at({1, t, 2})).epsilon(1e-14));
  }
}

TEST_CASE("GRN: permuting tokens leaves n unchanged and samples are independent") {
  GlobalResponseNorm grn(3);
  grn.to(DType::f64);
  randomize_parameters(grn, 9);
  const Tensor x = variable({2, 4, 3}, 10).detach();
  const Tensor y = grn(x);
  // Reverse the tokens of every sample: y is reversed the same way (n did not change).
  const Tensor reversed =
      cat({slice(x, 1, 3, 4), slice(x, 1, 2, 3), slice(x, 1, 1, 2), slice(x, 1, 0, 1)}, 1);
  const Tensor y_reversed = grn(reversed);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 4; ++t)
      for (int64_t c = 0; c < 3; ++c)
        CHECK(y_reversed.at({b, 3 - t, c}) == doctest::Approx(y.at({b, t, c})).epsilon(1e-14));
  // Changing sample 0 leaves sample 1 bit for bit unchanged.
  Tensor changed = x.clone();
  changed.set_at({0, 2, 1}, 50.0);
  const Tensor y_changed = grn(changed);
  CHECK(select(y_changed, 0, 1).to_vector() == select(y, 0, 1).to_vector());
  CHECK(select(y_changed, 0, 0).to_vector() != select(y, 0, 0).to_vector());
}

TEST_CASE("GRN normalises each sample by its own scale: n is scale invariant") {
  GlobalResponseNorm grn(3);
  grn.to(DType::f64);
  randomize_parameters(grn, 11);
  const Tensor x = variable({1, 5, 3}, 12).detach();
  const Tensor beta = grn.beta().detach();
  // y(a x) - beta = a (y(x) - beta) up to the eps on the mean.
  const Tensor lhs = sub(grn(mul(x, 10.0)), beta), rhs = mul(sub(grn(x), beta), 10.0);
  for (int64_t i = 0; i < 15; ++i)
    CHECK(lhs.to_vector()[i] == doctest::Approx(rhs.to_vector()[i]).epsilon(1e-5));
}

TEST_CASE("GRN passes gradcheck on 3-, 4- and 5-D inputs, gamma and beta") {
  GlobalResponseNorm grn(4);
  grn.to(DType::f64);
  randomize_parameters(grn, 13);
  for (const Shape& shape : {Shape{2, 5, 4}, Shape{2, 3, 3, 4}, Shape{2, 2, 3, 2, 4}}) {
    INFO("input shape ", shape_str(shape));
    expect_module_gradients("GlobalResponseNorm", grn, variable(shape, 14),
                            [&](const Tensor& x) { return grn(x); });
  }
}

TEST_CASE("GRN counts 6 * num_tokens * dim FLOPs, as the forward records") {
  GlobalResponseNorm grn(256);
  for (const Shape& s : {Shape{8, 49, 256}, Shape{8, 7, 7, 256}}) {
    FlopCounter flops;
    grn(zeros(s));
    CHECK(flops.total() == 6.0 * 8 * 49 * 256);
  }
}

TEST_CASE("GRN rejects a channel mismatch and an input without a spatial axis") {
  GlobalResponseNorm grn(256);
  CHECK_THROWS_WITH_AS(
      grn(zeros({8, 49, 128})),
      "GlobalResponseNorm(dim=256): input last axis is 128, expected 256 (input shape [8,49,128])",
      Error);
  CHECK_THROWS_WITH_AS(grn(zeros({8, 256})),
                       "GlobalResponseNorm(dim=256): input must be (B, spatial..., C) with at "
                       "least one spatial axis, got shape [8,256]",
                       Error);
  CHECK_THROWS_AS(grn(zeros({256})), Error);
  CHECK_THROWS_AS(grn(zeros({8, 49, 128})), Error);
}
