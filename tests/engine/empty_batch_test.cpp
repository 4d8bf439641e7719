// A batch of no rows, as PyTorch takes it: every op with a batch axis gives an empty output,
// an empty input gradient and parameter gradients that are empty sums (zeros), in fp32 and
// with bf16 products; the losses that average over the batch refuse it with one error line.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/core/rng.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/ops/ops.h"

using namespace vg;

namespace {

struct Case {
  std::string name;
  std::vector<Shape> shapes;  // the batch input first (its first axis 0), then the parameters
  std::function<Tensor(const std::vector<Tensor>&)> op;
};

std::vector<Case> cases() {
  Rng rng(3);
  return {
      {"linear", {{0, 8}, {4, 8}, {4}}, [](auto& in) { return linear(in[0], in[1], in[2]); }},
      {"matmul", {{0, 5, 8}, {8, 3}}, [](auto& in) { return matmul(in[0], in[1]); }},
      {"scaled_linear",
       {{0, 8}, {4, 8}, {4}, {4}},
       [](auto& in) { return scaled_linear(in[0], in[1], in[2], in[3]); }},
      {"gelu_linear",
       {{0, 8}, {4, 8}, {4}},
       [](auto& in) { return gelu_linear(in[0], in[1], in[2]); }},
      {"layer_norm",
       {{0, 5, 8}, {8}, {8}},
       [](auto& in) { return layer_norm(in[0], in[1], in[2]); }},
      {"layer_norm_linear",
       {{0, 8}, {8}, {8}, {4, 8}, {4}},
       [](auto& in) { return layer_norm_linear(in[0], in[1], in[2], 1e-6, in[3], in[4]); }},
      {"affine_linear",
       {{0, 8}, {8}, {8}, {4, 8}, {4}},
       [](auto& in) { return affine_linear(in[0], in[1], in[2], in[3], in[4]); }},
      {"gelu_grn_linear",
       {{0, 5, 8}, {8}, {8}, {4, 8}, {4}},
       [](auto& in) { return gelu_grn_linear(in[0], in[1], in[2], 1e-6, in[3], in[4]); }},
      {"channel_affine",
       {{0, 8}, {8}, {8}},
       [](auto& in) { return channel_affine(in[0], in[1], in[2]); }},
      {"global_response_norm",
       {{0, 5, 8}, {8}, {8}},
       [](auto& in) { return global_response_norm(in[0], in[1], in[2]); }},
      {"qkv_attention", {{0, 5, 24}}, [](auto& in) { return qkv_attention(in[0], 2); }},
      {"scaled_dot_product_attention",
       {{0, 2, 5, 4}},
       [](auto& in) { return scaled_dot_product_attention(in[0], in[0], in[0]); }},
      {"patchify", {{0, 8, 8, 1}}, [](auto& in) { return patchify(in[0], 4); }},
      {"conv2d",
       {{0, 8, 8, 2}, {3, 2, 3, 3}, {3}},
       [](auto& in) { return conv2d(in[0], in[1], in[2], 1, 1); }},
      {"softmax", {{0, 5}}, [](auto& in) { return softmax(in[0]); }},
      {"gelu", {{0, 5}}, [](auto& in) { return gelu(in[0]); }},
      {"dropout", {{0, 5}}, [rng](auto& in) mutable { return dropout(in[0], 0.5, rng); }},
  };
}

bool all_zero(const Tensor& t) {
  for (const double v : t.to_vector())
    if (v != 0.0) return false;
  return true;
}

}  // namespace

TEST_CASE("every op with a batch axis takes an empty batch, in fp32 and with bf16 products") {
  for (const MatmulPrecision precision : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
    if (precision == MatmulPrecision::bf16 && bf16_hardware() == Bf16Hardware::none) continue;
    const MatmulPrecisionGuard mode(precision);
    for (const Case& c : cases()) {
      INFO(c.name, ", bf16 ", precision == MatmulPrecision::bf16);
      std::vector<Tensor> in;
      for (const Shape& s : c.shapes) {
        in.push_back(full(s, 0.5));
        in.back().set_requires_grad();
      }
      const Tensor y = c.op(in);
      CHECK(y.numel() == 0);
      REQUIRE(y.dim() >= 1);
      CHECK(y.size(0) == 0);
      sum(y).backward();
      for (size_t i = 0; i < in.size(); ++i) {
        const std::string which = i == 0 ? "input" : "parameter " + std::to_string(i);
        INFO(which);
        REQUIRE(in[i].grad().defined());
        CHECK(in[i].grad().shape() == in[i].shape());
        CHECK(all_zero(in[i].grad()));  // an empty input's gradient, or a sum over no rows
      }
    }
  }
}

TEST_CASE("the losses that average over the batch refuse an empty one with one error line") {
  const Tensor logits = zeros({0, 5});
  CHECK_THROWS_WITH_AS(cross_entropy(logits, std::vector<int32_t>{}),
                       doctest::Contains("cross_entropy: empty logits of shape [0,5]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, zeros({0, 5})),
                       doctest::Contains("cross_entropy: empty logits of shape [0,5]"), Error);
}
