// The fused linears of ops/fused_linear.cpp against the op-by-op graphs they replace: the
// same bits (or, with an output scale, the same values up to rounding), float64 gradchecks,
// what they keep alive for backward, and their messages.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/autograd/profile.h"
#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/core/storage.h"
#include "engine/kernels/matmul_precision.h"
#include "tests/engine/bf16_tiles_helpers.h"
#include "tests/engine/float_tiles_helpers.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::variable;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct Case {
  std::string name;
  std::vector<Shape> shapes;  // x first, then the parameters
  Fn fused, reference;
  bool scaled;  // an output scale: gradients agree up to rounding, not bit for bit
};

// x (B, T, C) = (4, 33, 48) with C -> 40 products and GRN cases (both GELU forms) on a hidden
// size of 96.
std::vector<Case> cases() {
  const double eps = 1e-6;
  std::vector<Case> c;
  c.push_back(
      {"layer_norm_linear",
       {{4, 33, 48}, {48}, {48}, {40, 48}, {40}},
       [=](const auto& in) { return layer_norm_linear(in[0], in[1], in[2], eps, in[3], in[4]); },
       [=](const auto& in) { return linear(layer_norm(in[0], in[1], in[2], eps), in[3], in[4]); },
       false});
  c.push_back(
      {"affine_linear",
       {{4, 33, 48}, {48}, {48}, {40, 48}, {40}},
       [](const auto& in) { return affine_linear(in[0], in[1], in[2], in[3], in[4]); },
       [](const auto& in) { return linear(channel_affine(in[0], in[1], in[2]), in[3], in[4]); },
       false});
  c.push_back(
      {"gelu_grn_linear",
       {{4, 33, 96}, {96}, {96}, {40, 96}, {40}},
       [=](const auto& in) { return gelu_grn_linear(in[0], in[1], in[2], eps, in[3], in[4]); },
       [=](const auto& in) {
         return linear(global_response_norm(gelu(in[0]), in[1], in[2], eps), in[3], in[4]);
       },
       false});
  c.push_back({"gelu_grn_linear, tanh form",
               {{4, 33, 96}, {96}, {96}, {40, 96}, {40}},
               [=](const auto& in) {
                 return gelu_grn_linear(in[0], in[1], in[2], eps, in[3], in[4], GeluApprox::tanh);
               },
               [=](const auto& in) {
                 return linear(
                     global_response_norm(gelu(in[0], GeluApprox::tanh), in[1], in[2], eps), in[3],
                     in[4]);
               },
               false});
  c.push_back({"scaled_linear",
               {{4, 33, 48}, {40, 48}, {40}, {40}},
               [](const auto& in) { return scaled_linear(in[0], in[1], in[2], in[3]); },
               [](const auto& in) { return channel_affine(linear(in[0], in[1], in[2]), in[3]); },
               true});
  c.push_back(
      {"gelu_linear with out_scale",
       {{4, 33, 96}, {40, 96}, {40}, {40}},
       [](const auto& in) { return gelu_linear(in[0], in[1], in[2], GeluApprox::none, in[3]); },
       [](const auto& in) { return channel_affine(linear(gelu(in[0]), in[1], in[2]), in[3]); },
       true});
  c.push_back(
      {"gelu_grn_linear with out_scale",
       {{4, 33, 96}, {96}, {96}, {40, 96}, {40}, {40}},
       [=](const auto& in) {
         return gelu_grn_linear(in[0], in[1], in[2], eps, in[3], in[4], GeluApprox::none, in[5]);
       },
       [=](const auto& in) {
         return channel_affine(
             linear(global_response_norm(gelu(in[0]), in[1], in[2], eps), in[3], in[4]), in[5]);
       },
       true});
  // A block's residual add folded in: add(r, ...) with its bits and its gradient.
  c.push_back({"scaled_linear with residual",
               {{4, 33, 48}, {40, 48}, {40}, {40}, {4, 33, 40}},
               [](const auto& in) { return scaled_linear(in[0], in[1], in[2], in[3], in[4]); },
               [](const auto& in) {
                 return add(in[4], channel_affine(linear(in[0], in[1], in[2]), in[3]));
               },
               true});
  c.push_back({"gelu_linear with residual",
               {{4, 33, 96}, {40, 96}, {40}, {4, 33, 40}},
               [](const auto& in) {
                 return gelu_linear(in[0], in[1], in[2], GeluApprox::none, Tensor(), in[3]);
               },
               [](const auto& in) { return add(in[3], linear(gelu(in[0]), in[1], in[2])); },
               false});
  c.push_back({"gelu_grn_linear with out_scale and residual",
               {{4, 33, 96}, {96}, {96}, {40, 96}, {40}, {40}, {4, 33, 40}},
               [=](const auto& in) {
                 return gelu_grn_linear(in[0], in[1], in[2], eps, in[3], in[4], GeluApprox::none,
                                        in[5], in[6]);
               },
               [=](const auto& in) {
                 return add(in[6], channel_affine(linear(global_response_norm(gelu(in[0]), in[1],
                                                                               in[2], eps),
                                                         in[3], in[4]),
                                                  in[5]));
               },
               true});
  return c;
}

// Output and every input gradient of fn on copies of `values`, for the output gradient dy.
std::vector<Tensor> run(const Fn& fn, const std::vector<Tensor>& values, const Tensor& dy) {
  std::vector<Tensor> in;
  for (const Tensor& v : values) in.push_back(v.detach().clone().set_requires_grad());
  Tensor y = fn(in);
  y.backward(dy);
  std::vector<Tensor> out{y.detach()};
  for (const Tensor& t : in) out.push_back(t.grad());
  return out;
}

// Largest |a - b| / (1 + |b|) over the elements.
double max_rel_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> va = a.to_vector(), vb = b.to_vector();
  double worst = 0;
  for (size_t i = 0; i < va.size(); ++i)
    worst = std::max(worst, std::fabs(va[i] - vb[i]) / (1 + std::fabs(vb[i])));
  return worst;
}

size_t count_different(const Tensor& a, const Tensor& b) {
  const std::vector<double> va = a.to_vector(), vb = b.to_vector();
  size_t n = 0;
  for (size_t i = 0; i < va.size(); ++i) n += va[i] != vb[i];
  return n;
}

std::vector<Tensor> draw(const Case& c, DType dtype, uint64_t seed) {
  Rng rng(seed);
  std::vector<Tensor> values;
  for (const Shape& s : c.shapes) values.push_back(randn(s, rng, dtype) * 0.5 + 0.25);
  return values;
}

}  // namespace

TEST_CASE("each fused linear equals its op-by-op graph in float32, at one and two threads") {
  const int threads = num_threads();
  for (int n : {1, 2}) {
    set_num_threads(n);
    for (const Case& c : cases()) {
      const std::vector<Tensor> values = draw(c, DType::f32, 71);
      Rng rng(72);
      Tensor dy = randn({4, 33, 40}, rng);
      const std::vector<Tensor> fused = run(c.fused, values, dy),
                                ref = run(c.reference, values, dy);
      REQUIRE(fused.size() == ref.size());
      for (size_t i = 0; i < fused.size(); ++i) {
        INFO(c.name, ", threads ", n, i == 0 ? ", output" : cat_str(", gradient of input ", i - 1));
        REQUIRE(fused[i].shape() == ref[i].shape());
        if (i == 0 || !c.scaled)
          CHECK(count_different(fused[i], ref[i]) == 0);  // the same bits
        else
          // Float32 rounding of other sums (ds from G = dy^T a, not from the product): up to
          // 2.03e-5 measured, with OpenBLAS's oldest kernels (Prescott) under -O1; a wrong term
          // would be off by far more.
          CHECK(max_rel_diff(fused[i], ref[i]) < 5e-5);
      }
    }
  }
  set_num_threads(threads);
}

TEST_CASE("a fused linear adds its residual inside the op: no add recorded, the residual intact") {
  // In float32 the residual is added in a pass of its own after the product; as an `add` op,
  // that op was charged the product's time in `bench --profile`.
  Rng rng(75);
  const Tensor x = randn({4, 33, 48}, rng).set_requires_grad(), w = randn({40, 48}, rng),
               b = randn({40}, rng), s = randn({40}, rng), h = randn({4, 33, 96}, rng),
               w2 = randn({40, 96}, rng), residual = randn({4, 33, 40}, rng);
  const std::vector<double> before = residual.to_vector();
  OpProfiler profiler;
  const Tensor y = scaled_linear(x, w, b, s, residual);
  const Tensor z = gelu_linear(h, w2, b, GeluApprox::none, Tensor(), residual);
  for (const auto& [name, seconds] : profiler.seconds()) {
    INFO(name);
    CHECK(name.rfind("add", 0) != 0);
  }
  CHECK(profiler.seconds().count("scaled_linear") == 1);
  CHECK(profiler.seconds().count("gelu_linear") == 1);
  CHECK(residual.to_vector() == before);
  CHECK(y.data<float>() != residual.data<float>());
  CHECK(z.data<float>() != residual.data<float>());
}

TEST_CASE("in bf16 mode each fused linear's output has the op-by-op graph's bits") {
  // Every product of both graphs reads bf16 operands; the fused ones make their maps' values
  // again in backward, or keep them from the forward as bf16 (LayerNorm's, an affine's). The
  // same bits and forward FLOPs; unscaled gradients keep the bits too.
  const testing::Bf16ModelWhereNeeded model;  // on a CPU without bf16 units
  const MatmulPrecisionGuard amp(MatmulPrecision::bf16);
  std::vector<Case> all = cases();
  for (const GeluApprox approx : {GeluApprox::none, GeluApprox::tanh})
    all.push_back({approx == GeluApprox::none ? "gelu_linear" : "gelu_linear, tanh",
                   {{4, 33, 96}, {40, 96}, {40}},
                   [=](const auto& in) { return gelu_linear(in[0], in[1], in[2], approx); },
                   [=](const auto& in) { return linear(gelu(in[0], approx), in[1], in[2]); },
                   false});
  const int threads = num_threads();
  for (int n : {1, 2}) {
    set_num_threads(n);
    for (const Case& c : all) {
      const std::vector<Tensor> values = draw(c, DType::f32, 73);
      Rng rng(74);
      Tensor dy = randn({4, 33, 40}, rng);
      const std::vector<Tensor> fused = run(c.fused, values, dy),
                                ref = run(c.reference, values, dy);
      INFO(c.name, ", threads ", n);
      CHECK(count_different(fused[0], ref[0]) == 0);
      for (size_t i = 1; i < fused.size() && !c.scaled; ++i)
        CHECK(count_different(fused[i], ref[i]) == 0);
      FlopCounter fused_flops;  // of the forward alone: backward recomputes the map
      // With no gradient wanted nothing is kept, and the product makes the map's values where
      // the map can (LayerNorm's, GELU's) as it packs them: the same bits again.
      const Tensor no_grad = c.fused(values);
      CHECK(count_different(no_grad, ref[0]) == 0);
      const double fused_total = fused_flops.total();
      FlopCounter ref_flops;
      c.reference(values);
      CHECK(fused_total == ref_flops.total());
    }
  }
  set_num_threads(threads);
}

TEST_CASE("with an output scale, the fused gradients equal op-by-op ones to float64 rounding") {
  for (const Case& c : cases()) {
    if (!c.scaled) continue;
    const std::vector<Tensor> values = draw(c, DType::f64, 73);
    Rng rng(74);
    Tensor dy = randn({4, 33, 40}, rng, DType::f64);
    const std::vector<Tensor> fused = run(c.fused, values, dy), ref = run(c.reference, values, dy);
    for (size_t i = 0; i < fused.size(); ++i) {
      INFO(c.name, ", result ", i);
      CHECK(max_rel_diff(fused[i], ref[i]) < 1e-12);
    }
  }
}

TEST_CASE("the fused linears pass float64 gradchecks on every input, broadcast over 1 to 3 axes") {
  for (const Shape& lead : {Shape{}, Shape{5}, Shape{2, 3}}) {
    auto with = [&](int64_t C) {
      Shape s = lead;
      s.push_back(C);
      return s;
    };
    const std::string where = cat_str("x ", shape_str(with(4)));
    Tensor x = variable(with(4), 81), nw = variable({4}, 82), nb = variable({4}, 83);
    Tensor w = variable({3, 4}, 84), b = variable({3}, 85), s = variable({3}, 86);
    expect_gradients(
        "layer_norm_linear, " + where,
        [](const auto& in) { return layer_norm_linear(in[0], in[1], in[2], 1e-6, in[3], in[4]); },
        {x, nw, nb, w, b});
    expect_gradients(
        "affine_linear, " + where,
        [](const auto& in) { return affine_linear(in[0], in[1], in[2], in[3], in[4]); },
        {x, nw, nb, w, b});
    expect_gradients("scaled_linear, " + where,
                     [](const auto& in) { return scaled_linear(in[0], in[1], in[2], in[3]); },
                     {x, w, b, s});
    expect_gradients(
        "gelu_linear with out_scale, " + where,
        [](const auto& in) { return gelu_linear(in[0], in[1], in[2], GeluApprox::tanh, in[3]); },
        {x, w, b, s});
    Tensor r = variable(with(3), 93);
    expect_gradients(
        "scaled_linear with residual, " + where,
        [](const auto& in) { return scaled_linear(in[0], in[1], in[2], in[3], in[4]); },
        {x, w, b, s, r});
    expect_gradients("gelu_linear with out_scale and residual, " + where,
                     [](const auto& in) {
                       return gelu_linear(in[0], in[1], in[2], GeluApprox::none, in[3], in[4]);
                     },
                     {x, w, b, s, r});
  }
  // GRN needs a token axis: (B, T, C).
  Tensor h = variable({2, 5, 4}, 87), gm = variable({4}, 88), bt = variable({4}, 89);
  Tensor w = variable({3, 4}, 90), s = variable({3}, 91);
  Tensor b = variable({3}, 92);
  expect_gradients("gelu_grn_linear without bias",
                   [](const auto& in) {
                     return gelu_grn_linear(in[0], in[1], in[2], 1e-6, in[3], Tensor(),
                                            GeluApprox::none, in[4]);
                   },
                   {h, gm, bt, w, s});
  expect_gradients("gelu_grn_linear, tanh form, with bias",
                   [](const auto& in) {
                     return gelu_grn_linear(in[0], in[1], in[2], 1e-6, in[3], in[4],
                                            GeluApprox::tanh, in[5]);
                   },
                   {h, gm, bt, w, b, s});
  Tensor r = variable({2, 5, 3}, 94);
  expect_gradients("gelu_grn_linear with residual",
                   [](const auto& in) {
                     return gelu_grn_linear(in[0], in[1], in[2], 1e-6, in[3], in[4],
                                            GeluApprox::none, in[5], in[6]);
                   },
                   {h, gm, bt, w, b, s, r});
}

TEST_CASE("layer_norm_linear keeps x for backward, never the normalised x") {
  // x is 64 KiB and the output 8 KiB. The fused op holds only its output (x is the
  // caller's); op by op, linear also keeps layer_norm's output for dW.
  Rng rng(92);
  Tensor x = randn({64, 256}, rng).set_requires_grad();
  Tensor nw = ones({256}).set_requires_grad(), nb = zeros({256}).set_requires_grad();
  Tensor w = randn({32, 256}, rng).set_requires_grad(), s = ones({32}).set_requires_grad();
  const int64_t x_bytes = x.numel() * 4;
  auto held_by = [&](auto make) {
    const int64_t before = memory_stats().bytes_in_use;
    Tensor y = make();
    return memory_stats().bytes_in_use - before;
  };
  const int64_t fused = held_by([&] { return layer_norm_linear(x, nw, nb, 1e-6, w); });
  const int64_t reference = held_by([&] { return linear(layer_norm(x, nw, nb), w); });
  // LayerScale op by op keeps the product (8 KiB); folded into the linear it keeps nothing.
  const int64_t scaled = held_by([&] { return scaled_linear(x, w, Tensor(), s); });
  const int64_t unfolded = held_by([&] { return channel_affine(linear(x, w), s); });
  INFO("bytes held: fused ", fused, ", op by op ", reference, "; scaled ", scaled, " vs ",
       unfolded);
  CHECK(fused < x_bytes);
  CHECK(reference >= x_bytes);
  CHECK(unfolded - scaled >= 32 * 64 * 4);
}

TEST_CASE("in bf16 mode layer_norm_linear keeps the normalised x as bf16, half its bytes") {
  // dW's product reads the normalised x rounded to bf16: kept from the forward (with the
  // statistics), backward makes nothing again. x is 64 KiB, its bf16 copy 32 KiB.
  const testing::Bf16ModelWhereNeeded model;  // on a CPU without bf16 units
  const MatmulPrecisionGuard amp(MatmulPrecision::bf16);
  Rng rng(93);
  Tensor x = randn({64, 256}, rng).set_requires_grad();
  Tensor w = randn({32, 256}, rng).set_requires_grad(), frozen = w.detach();
  const int64_t x_bytes = x.numel() * 4, out_bytes = 64 * 32 * 4;
  auto held_by = [&](auto make) {
    const int64_t before = memory_stats().bytes_in_use;
    Tensor y = make();
    return memory_stats().bytes_in_use - before - out_bytes;
  };
  const int64_t trained =
      held_by([&] { return layer_norm_linear(x, Tensor(), Tensor(), 1e-6, w); });
  // A frozen weight needs no dW: nothing is kept.
  const int64_t no_dw =
      held_by([&] { return layer_norm_linear(x, Tensor(), Tensor(), 1e-6, frozen); });
  INFO("bytes held besides the output: ", trained, ", with a frozen weight ", no_dw);
  CHECK(trained >= x_bytes / 2);
  CHECK(trained < x_bytes);
  CHECK(no_dw < x_bytes / 2);
}

TEST_CASE("gelu_linear's forward never stores GELU's values where the products make rows") {
  // The product makes GELU's values a block of rows at a time as it reads them (the float
  // tiles) or packs them (bf16 mode); with fp32 products on OpenBLAS alone the op makes them
  // whole first, as the op-by-op graph does. h is 96 KiB, the output 16 KiB.
  const testing::Bf16ModelWhereNeeded model;  // on a CPU without bf16 units
  Rng rng(94);
  Tensor h = randn({128, 192}, rng).set_requires_grad();
  Tensor w = randn({32, 192}, rng).set_requires_grad();
  const int64_t h_bytes = h.numel() * 4;
  auto peak_above_output = [&](MatmulPrecision precision) {
    const MatmulPrecisionGuard mode(precision);
    const int64_t before = memory_stats().bytes_in_use;
    reset_peak_memory();
    Tensor y = gelu_linear(h, w);
    return memory_stats().peak_bytes_in_use - before - y.numel() * 4;
  };
  testing::for_each_float_tiles([&](detail::FloatTiles tiles) {
    const int64_t bf16 = peak_above_output(MatmulPrecision::bf16);
    const int64_t fp32 = peak_above_output(MatmulPrecision::fp32);
    INFO("peak bytes besides the output: bf16 ", bf16, ", fp32 ", fp32);
    CHECK(bf16 < h_bytes / 2);
    if (tiles == detail::FloatTiles::none)
      CHECK(fp32 >= h_bytes);
    else
      CHECK(fp32 < h_bytes / 2);
  });
}

TEST_CASE("the fused linears reject misshaped or mistyped operands with the op's name") {
  Tensor x = zeros({2, 3, 4}), w = zeros({5, 4}), b = zeros({5});
  CHECK_THROWS_WITH_AS(scaled_linear(x, w, b, zeros({4})),
                       doctest::Contains("scaled_linear: out_scale has shape [4], expected [5]"),
                       Error);
  CHECK_THROWS_WITH_AS(scaled_linear(x, w, b, zeros({5}, DType::f64)),
                       doctest::Contains("scaled_linear: out_scale is float64"), Error);
  CHECK_THROWS_WITH_AS(scaled_linear(x, w, b, Tensor()),
                       doctest::Contains("scaled_linear: undefined out_scale"), Error);
  CHECK_THROWS_WITH_AS(layer_norm_linear(x, zeros({3}), Tensor(), 1e-6, w),
                       doctest::Contains("layer_norm: weight has shape [3]"), Error);
  CHECK_THROWS_WITH_AS(layer_norm_linear(x, Tensor(), Tensor(), 1e-6, zeros({5, 3})),
                       doctest::Contains("layer_norm_linear: x's last axis is 4, expected in=3"),
                       Error);
  CHECK_THROWS_WITH_AS(affine_linear(x, Tensor(), Tensor(), w),
                       doctest::Contains("affine_linear: undefined scale"), Error);
  CHECK_THROWS_WITH_AS(gelu_grn_linear(zeros({2, 4}), zeros({4}), zeros({4}), 1e-6, w),
                       doctest::Contains("global_response_norm: input must be (B, spatial..., C)"),
                       Error);
  CHECK_THROWS_WITH_AS(gelu_linear(x, w, b, GeluApprox::none, zeros({2})),
                       doctest::Contains("gelu_linear: out_scale has shape [2]"), Error);
  CHECK_THROWS_WITH_AS(scaled_linear(x, w, b, ones({5}), zeros({2, 1, 5})),
                       doctest::Contains("scaled_linear: residual has shape [2,1,5], expected "
                                         "[2,3,5] (the output's)"),
                       Error);
  const Tensor r64 = zeros({2, 3, 5}, DType::f64);
  CHECK_THROWS_WITH_AS(gelu_linear(x, w, b, GeluApprox::none, Tensor(), r64),
                       doctest::Contains("gelu_linear: residual is float64, weight is float32"),
                       Error);
}

TEST_CASE("in bf16 mode gelu_linear's backward writes GELU's values as bf16, half their bytes") {
  // Backward makes GELU's values again for dW in the pass that makes dh; in bf16 mode it
  // writes them rounded, as dW's product reads them. h is 96 KiB; dh takes da's memory.
  const testing::Bf16ModelWhereNeeded model;  // on a CPU without bf16 units
  Rng rng(95);
  Tensor h = randn({128, 192}, rng).set_requires_grad();
  Tensor w = randn({32, 192}, rng).set_requires_grad();
  Tensor dy = randn({128, 32}, rng);
  const int64_t h_bytes = h.numel() * 4;
  // The second backward adds to the gradients in place: the peak is the op's own.
  auto second_backward_peak = [&](MatmulPrecision precision) {
    const MatmulPrecisionGuard mode(precision);
    gelu_linear(h, w).backward(dy);
    Tensor y = gelu_linear(h, w);
    const int64_t before = memory_stats().bytes_in_use;
    reset_peak_memory();
    y.backward(dy);
    const int64_t peak = memory_stats().peak_bytes_in_use - before;
    h.zero_grad(), w.zero_grad();
    return peak;
  };
  const int64_t bf16 = second_backward_peak(MatmulPrecision::bf16);
  const int64_t fp32 = second_backward_peak(MatmulPrecision::fp32);
  INFO("peak bytes in backward: bf16 ", bf16, ", fp32 ", fp32);
  CHECK(fp32 >= 2 * h_bytes);                // da and GELU's values, besides dW's
  CHECK(fp32 - bf16 >= h_bytes / 2 - 1024);  // half of GELU's bytes fewer (give or take sums)
}

TEST_CASE("in bf16 mode scaled_linear keeps its input as bf16: linear's bits, half the bytes") {
  // dW's product reads x rounded to bf16, kept from the forward; backward needs nothing else of
  // x, so the float x is not held. With a unit scale every gradient is linear's, bit for bit.
  const testing::Bf16ModelWhereNeeded model;  // on a CPU without bf16 units
  const MatmulPrecisionGuard amp(MatmulPrecision::bf16);
  Rng rng(96);
  const Tensor x = randn({4, 33, 48}, rng), w = randn({40, 48}, rng), b = randn({40}, rng);
  const Tensor dy = randn({4, 33, 40}, rng);
  const std::vector<Tensor> fused = run(
      [](const auto& in) { return scaled_linear(in[0], in[1], in[2], ones({40})); }, {x, w, b}, dy);
  const std::vector<Tensor> plain =
      run([](const auto& in) { return linear(in[0], in[1], in[2]); }, {x, w, b}, dy);
  for (size_t i = 0; i < fused.size(); ++i) {
    INFO("result ", i);
    CHECK(count_different(fused[i], plain[i]) == 0);
  }
  // x made inside: what the output's graph holds of it, besides the output.
  const int64_t x_bytes = 64 * 256 * 4, out_bytes = 64 * 32 * 4;
  Tensor w2 = randn({32, 256}, rng).set_requires_grad(), s = ones({32});
  auto held = [&](MatmulPrecision precision) {
    const MatmulPrecisionGuard mode(precision);
    const int64_t before = memory_stats().bytes_in_use;
    Tensor y = scaled_linear(randn({64, 256}, rng), w2, Tensor(), s);
    return memory_stats().bytes_in_use - before - out_bytes;
  };
  const int64_t bf16 = held(MatmulPrecision::bf16), fp32 = held(MatmulPrecision::fp32);
  INFO("bytes held besides the output: bf16 ", bf16, ", fp32 ", fp32);
  CHECK(fp32 >= x_bytes);
  CHECK(bf16 >= x_bytes / 2);
  CHECK(bf16 < x_bytes);
}
