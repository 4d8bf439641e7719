#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/kernels/matmul_precision.h"
#include "tests/engine/fixture_helpers.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_close;
using vg::testing::expect_gradients;
using vg::testing::fixture_tensor;
using vg::testing::load_fixture;
using vg::testing::variable;

TEST_CASE("conv2d with a ones kernel sums each pixel's neighbourhood") {
  // The 3x3 image 1..9, one channel; a 3x3 kernel of ones with padding 1 sums the pixels
  // around each one (those in the padding count 0), and the bias is added once.
  const Tensor x = (arange(9) + 1.0).reshape({1, 3, 3, 1});
  const Tensor w = ones({1, 1, 3, 3}), b = full({1}, 0.5);
  CHECK(conv2d(x, w, b, 1, 1).to_vector() ==
        std::vector<double>{12.5, 21.5, 16.5, 27.5, 45.5, 33.5, 24.5, 39.5, 28.5});
  // Stride 2 keeps the corners' sums: a 2x2 output.
  const Tensor y = conv2d(x, w, b, 2, 1);
  CHECK(y.shape() == Shape{1, 2, 2, 1});
  CHECK(y.to_vector() == std::vector<double>{12.5, 16.5, 24.5, 28.5});
  // Without padding only the centre fits.
  CHECK(conv2d(x, w, Tensor(), 1, 0).to_vector() == std::vector<double>{45});
}

TEST_CASE("conv2d reads the weight in PyTorch's [C_out, C_in, k, k] order") {
  // x[0, i, j, c] = 2 (2i + j) + c and w[0, c, i, j] = 4c + 2i + j on one 2x2 window:
  // y = sum over c, i, j of w[0, c, i, j] x[0, i, j, c] = 28 (channel 0) + 98 (channel 1).
  const Tensor x = arange(8).reshape({1, 2, 2, 2}), w = arange(8).reshape({1, 2, 2, 2});
  CHECK(conv2d(x, w, Tensor()).to_vector() == std::vector<double>{126});
  // Two output channels: the second weight is the first doubled, plus a bias of -1.
  const Tensor w2 = cat({w, w * 2.0}, 0), b = from_vector(std::vector<float>{0, -1}, {2});
  CHECK(conv2d(x, w2, b).to_vector() == std::vector<double>{126, 251});
}

TEST_CASE("conv2d and its gradients match PyTorch") {
  const nlohmann::json fx = load_fixture("conv2d.json");
  REQUIRE(fx.at("conv2d").size() >= 6);
  for (auto [dt, tol] : {std::pair{DType::f64, 1e-10}, std::pair{DType::f32, 1e-5}}) {
    for (const auto& c : fx.at("conv2d")) {
      const int64_t stride = c["stride"], padding = c["padding"];
      INFO(dtype_name(dt), ", x ", c["x"]["shape"].dump(), ", weight ", c["weight"]["shape"].dump(),
           ", stride ", stride, ", padding ", padding);
      auto in = [&](const nlohmann::json& j) {
        return j.is_null() ? Tensor() : fixture_tensor(j, dt).set_requires_grad();
      };
      Tensor x = in(c["x"]), w = in(c["weight"]), b = in(c["bias"]);
      Tensor y = conv2d(x, w, b, stride, padding);
      y.backward(fixture_tensor(c["dy"], dt));
      expect_close("conv2d y", y, c["y"], tol);
      expect_close("conv2d dx", x.grad(), c["dx"], tol);
      expect_close("conv2d dweight", w.grad(), c["dweight"], tol);
      if (b.defined()) expect_close("conv2d dbias", b.grad(), c["dbias"], tol);
    }
  }
}

TEST_CASE("conv2d passes gradcheck for input, weight and bias") {
  struct Case {
    const char* name;
    Shape x, w;
    int64_t stride, padding;
  };
  for (const Case& c : {Case{"3x3, stride 1, padding 1", {2, 5, 5, 2}, {3, 2, 3, 3}, 1, 1},
                        Case{"3x3, stride 2, padding 1, odd", {2, 7, 5, 3}, {4, 3, 3, 3}, 2, 1},
                        Case{"3x3, stride 2, no padding", {1, 6, 7, 2}, {2, 2, 3, 3}, 2, 0},
                        Case{"2x2 patches", {2, 4, 4, 1}, {3, 1, 2, 2}, 2, 0},
                        Case{"1x1", {2, 3, 3, 4}, {2, 4, 1, 1}, 1, 0},
                        Case{"5x5, stride 3, padding 2", {1, 8, 9, 2}, {2, 2, 5, 5}, 3, 2}}) {
    const int64_t s = c.stride, p = c.padding;
    expect_gradients(c.name, [s, p](auto& in) { return conv2d(in[0], in[1], in[2], s, p); },
                     {variable(c.x, 1), variable(c.w, 2), variable({c.w[0]}, 3)});
  }
  expect_gradients("no bias", [](auto& in) { return conv2d(in[0], in[1], Tensor(), 2, 1); },
                   {variable({2, 5, 5, 2}, 4), variable({3, 2, 3, 3}, 5)});
}

TEST_CASE("conv2d gives the same bits with 1 and 2 threads") {
  const int previous = num_threads();
  const Tensor x0 = variable({8, 14, 14, 16}, 6).detach().to(DType::f32);
  const Tensor w0 = variable({32, 16, 3, 3}, 7).detach().to(DType::f32);
  const Tensor b0 = variable({32}, 8).detach().to(DType::f32);
  const Tensor dy = variable({8, 7, 7, 32}, 9).detach().to(DType::f32);
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor x = x0.clone().set_requires_grad(), w = w0.clone().set_requires_grad(),
           b = b0.clone().set_requires_grad();
    Tensor y = conv2d(x, w, b, 2, 1);
    y.backward(dy);
    return std::vector<std::vector<double>>{y.to_vector(), x.grad().to_vector(),
                                            w.grad().to_vector(), b.grad().to_vector()};
  };
  const auto one = run(1), two = run(2);
  CHECK(one == two);
  set_num_threads(previous);
}

TEST_CASE("conv2d counts its product's FLOPs and follows the matmul precision") {
  const Tensor x = variable({2, 8, 8, 4}, 10).detach().to(DType::f32);
  const Tensor w = variable({6, 4, 3, 3}, 11).detach().to(DType::f32);
  const Tensor b = zeros({6});
  Tensor fp32;
  {
    FlopCounter flops;
    fp32 = conv2d(x, w, b, 2, 1);  // 2 * 4 * 4 positions, 36 inputs, 6 outputs
    CHECK(flops.matmul() == 2.0 * 32 * 36 * 6);
    CHECK(flops.total() == 2.0 * 32 * 36 * 6 + 32 * 6);
  }
  if (bf16_hardware() == Bf16Hardware::none) return;
  MatmulPrecisionGuard amp(MatmulPrecision::bf16);
  const Tensor bf16 = conv2d(x, w, b, 2, 1);
  const std::vector<double> a = fp32.to_vector(), c = bf16.to_vector();
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    differ += a[i] != c[i];
    CHECK(c[i] == doctest::Approx(a[i]).epsilon(0.05).scale(1.0));
  }
  CHECK(differ > int(a.size()) / 2);  // the product really read bf16 operands
}

TEST_CASE("conv2d rejects bad shapes with one clear error") {
  const Tensor x = zeros({1, 5, 5, 2}), w = zeros({3, 2, 3, 3}), b = zeros({3});
  CHECK_THROWS_WITH_AS(conv2d(zeros({5, 5, 2}), w, b),
                       "conv2d: x must be (N, H, W, C_in) (x [5,5,2], weight [3,2,3,3], bias "
                       "[3], stride 1, padding 0)",
                       Error);
  CHECK_THROWS_WITH_AS(conv2d(x, zeros({3, 2, 3, 2}), b),
                       doctest::Contains("conv2d: weight must be (C_out, C_in, k, k)"), Error);
  CHECK_THROWS_WITH_AS(conv2d(zeros({1, 5, 5, 4}), w, b),
                       "conv2d: x has 4 channels, the weight expects 2 (x [1,5,5,4], weight "
                       "[3,2,3,3], bias [3], stride 1, padding 0)",
                       Error);
  CHECK_THROWS_WITH_AS(conv2d(x, w, zeros({2})),
                       doctest::Contains("conv2d: bias must be (C_out)=[3]"), Error);
  CHECK_THROWS_WITH_AS(conv2d(x, w, b, 0, 1),
                       doctest::Contains("conv2d: stride must be >= 1 and padding >= 0"), Error);
  CHECK_THROWS_WITH_AS(conv2d(x, w, b, 1, -1), doctest::Contains("padding >= 0"), Error);
  CHECK_THROWS_WITH_AS(conv2d(zeros({1, 2, 5, 2}), w, b),
                       doctest::Contains("conv2d: the 3x3 kernel is larger than the padded 2x5 "
                                         "image"),
                       Error);
  CHECK_THROWS_WITH_AS(conv2d(x.to(DType::f64), w, b),
                       doctest::Contains("conv2d: x, weight and bias must share a dtype"), Error);
}
