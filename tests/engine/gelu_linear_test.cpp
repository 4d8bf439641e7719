// gelu_linear against its op-by-op reference linear(gelu(h), W, b): the same bits forward
// and backward in float32, float64 gradchecks, what it keeps alive, and its messages.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/core/storage.h"
#include "tests/engine/float_tiles_helpers.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::variable;

namespace {

const char* approx_name(GeluApprox approx) {
  return approx == GeluApprox::none ? "erf" : "tanh";
}

// Fails with the tensor's name, the first differing element and both values unless a and b
// hold the same bits.
void check_same_bits(const std::string& what, const Tensor& a, const Tensor& b) {
  REQUIRE_MESSAGE(a.shape() == b.shape(), what, ": ", shape_str(a.shape()), " vs ",
                  shape_str(b.shape()));
  const std::vector<double> va = a.to_vector(), vb = b.to_vector();
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < va.size(); ++i)
    if (va[i] != vb[i] && differ++ == 0) first = i;
  INFO(what, ": ", differ, " of ", va.size(), " elements differ; first at ", first, ": ",
       differ ? va[first] : 0.0, " vs ", differ ? vb[first] : 0.0);
  CHECK(differ == 0);
}

// gelu_linear(h, W, b) against linear(gelu(h), W, b) for h (4, 65, in) and W (width, in): the
// output and every gradient with the same bits.
void check_fused_against_op_by_op(int64_t in, int64_t width, GeluApprox approx, bool with_bias) {
  const std::string what = cat_str(in, " -> ", width, ", ", approx_name(approx),
                                   with_bias ? ", bias" : ", no bias", ", threads ", num_threads());
  Rng rng(41);
  const Tensor h0 = randn({4, 65, in}, rng) * 2.0, w0 = randn({width, in}, rng) * 0.05,
               b0 = randn({width}, rng), dy = randn({4, 65, width}, rng);
  std::vector<Tensor> fused, reference;
  for (bool use_fused : {true, false}) {
    Tensor h = h0.detach().clone().set_requires_grad(), w = w0.detach().clone().set_requires_grad(),
           b = with_bias ? b0.detach().clone().set_requires_grad() : Tensor();
    Tensor y = use_fused ? gelu_linear(h, w, b, approx) : linear(gelu(h, approx), w, b);
    y.backward(dy);
    std::vector<Tensor>& out = use_fused ? fused : reference;
    out = {y.detach(), h.grad(), w.grad()};
    if (with_bias) out.push_back(b.grad());
  }
  const char* names[] = {"y", "dh", "dW", "db"};
  for (size_t i = 0; i < fused.size(); ++i)
    check_same_bits(cat_str(what, ": ", names[i]), fused[i], reference[i]);
}

}  // namespace

TEST_CASE("gelu_linear equals linear(gelu(h), W, b) bit for bit: output and every gradient") {
  // float32 at MLP-like sizes, so the vectorised GELU, the threaded kernels and the split
  // gemm all run (the forward's product on GELU's rows made a block at a time, where the
  // float tiles run; at 768 inputs over three chunks of k); on each kind of float tiles and on
  // OpenBLAS, with and without bias, both GELU forms, one and two threads.
  const int threads = num_threads();
  testing::for_each_float_tiles([&](detail::FloatTiles) {
    for (auto [in, width] : {std::pair<int64_t, int64_t>{256, 64}, {768, 192}})
      for (int n : {1, 2}) {
        set_num_threads(n);
        for (GeluApprox approx : {GeluApprox::none, GeluApprox::tanh})
          for (bool with_bias : {true, false})
            check_fused_against_op_by_op(in, width, approx, with_bias);
      }
  });
  set_num_threads(threads);
}

TEST_CASE("gelu_linear gradients pass gradcheck for h, weight and bias, both GELU forms") {
  for (GeluApprox approx : {GeluApprox::none, GeluApprox::tanh}) {
    for (const Shape& shape : {Shape{3}, Shape{4, 3}, Shape{2, 4, 3}}) {
      const std::string what = cat_str(approx_name(approx), ", h ", shape_str(shape));
      Tensor h = variable(shape, 42), w = variable({5, 3}, 43), b = variable({5}, 44);
      expect_gradients(cat_str("gelu_linear with bias, ", what),
                       [approx](const std::vector<Tensor>& in) {
                         return gelu_linear(in[0], in[1], in[2], approx);
                       },
                       {h, w, b});
      expect_gradients(cat_str("gelu_linear without bias, ", what),
                       [approx](const std::vector<Tensor>& in) {
                         return gelu_linear(in[0], in[1], Tensor(), approx);
                       },
                       {h, w});
    }
  }
}

TEST_CASE("gelu_linear keeps h for backward, never gelu(h)") {
  // h is 64 KiB; the output 8 KiB. Between the ops, the fused one holds only its output
  // (h is the caller's), while the op-by-op graph also keeps gelu(h) for linear's dW.
  Rng rng(45);
  Tensor h = randn({64, 256}, rng).set_requires_grad();
  Tensor w = randn({32, 256}, rng).set_requires_grad(), b = zeros({32}).set_requires_grad();
  const int64_t h_bytes = h.numel() * 4;
  auto held_by = [&](auto run) {
    const int64_t before = memory_stats().bytes_in_use;
    Tensor y = run();
    return memory_stats().bytes_in_use - before;
  };
  const int64_t fused = held_by([&] { return gelu_linear(h, w, b); });
  const int64_t reference = held_by([&] { return linear(gelu(h), w, b); });
  INFO("bytes held: fused ", fused, ", op by op ", reference, ", h ", h_bytes);
  CHECK(fused < h_bytes);
  CHECK(reference >= h_bytes);

  // Backward recomputes gelu(h) into a temporary that is gone once it returns.
  Tensor y = gelu_linear(h, w, b);
  const int64_t before = memory_stats().bytes_in_use;
  sum(y).backward();
  const int64_t grads = (h.numel() + w.numel() + b.numel()) * 4;
  CHECK(memory_stats().bytes_in_use - before <= grads + 4096);
}

TEST_CASE("gelu_linear records one node with an input per operand") {
  Tensor h = variable({2, 3, 4}, 46), w = variable({5, 4}, 47), b = variable({5}, 48);
  Tensor y = gelu_linear(h, w, b);
  REQUIRE(y.grad_fn());
  CHECK(std::string(y.grad_fn()->op) == "gelu_linear");
  // h, weight, bias, out_scale, residual: a fixed layout, the undefined operands never needed.
  REQUIRE(y.grad_fn()->inputs.size() == 5);
  CHECK(!y.grad_fn()->inputs[3].needed());
  CHECK(!y.grad_fn()->inputs[4].needed());
  CHECK(!gelu_linear(h, w).grad_fn()->inputs[2].needed());
  // Only the operands that need a gradient get one.
  Tensor frozen_w = w.detach();
  sum(gelu_linear(h, frozen_w, b)).backward();
  CHECK(h.grad().shape() == h.shape());
  CHECK(b.grad().to_vector() == std::vector<double>(5, 6.0));  // 6 rows, each dy = 1
  CHECK(!frozen_w.grad().defined());
}

TEST_CASE("gelu_linear counts GELU's FLOPs plus linear's") {
  FlopCounter fused;
  gelu_linear(zeros({2, 3, 4}), zeros({5, 4}), zeros({5}));
  const double fused_total = fused.total(), fused_matmul = fused.matmul();
  FlopCounter reference;
  linear(gelu(zeros({2, 3, 4})), zeros({5, 4}), zeros({5}));
  CHECK(fused_total == reference.total());
  CHECK(fused_matmul == 2.0 * 6 * 4 * 5);
}

TEST_CASE("gelu_linear rejects bad shapes with the op and the shapes") {
  CHECK_THROWS_WITH_AS(gelu_linear(zeros({2, 3}), zeros({5, 4})),
                       doctest::Contains("gelu_linear: h's last axis is 3, expected in=4 (h [2,3], "
                                         "weight [5,4], bias none)"),
                       Error);
  CHECK_THROWS_WITH_AS(gelu_linear(zeros({2, 4}), zeros({5, 4}), zeros({4})),
                       doctest::Contains("gelu_linear: bias must be (out)=[5] (h [2,4], weight "
                                         "[5,4], bias [4])"),
                       Error);
  CHECK_THROWS_WITH_AS(
      gelu_linear(zeros({2, 4}), zeros({4})),
      doctest::Contains("gelu_linear: weight must be (out, in) (h [2,4], weight [4]"), Error);
  CHECK_THROWS_WITH_AS(gelu_linear(zeros({2, 4}), zeros({5, 4}, DType::f64)),
                       doctest::Contains("gelu_linear: h, weight and bias must share a dtype"),
                       Error);
}
