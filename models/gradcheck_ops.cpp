// The op half of the gradient-check list: every function of engine/ops/ops.h, binary ops with
// each way an operand can broadcast (a row, a column, one element, both sides at once).
#include <cmath>

#include "engine/core/rng.h"
#include "engine/ops/ops.h"
#include "models/gradcheck_suite.h"

namespace vg {
namespace {

// How an input's values are drawn: kinks (abs, relu) and domains (log, sqrt, a divisor)
// need values that a step of 1e-5 cannot carry across a boundary.
enum class Values { normal, positive, away_from_zero };

struct Input {
  Shape shape;
  Values values = Values::normal;
};

Tensor leaf(const Input& in, uint64_t seed) {
  Rng rng(seed);
  Tensor t = randn(in.shape, rng, DType::f64);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (in.values == Values::positive) p[i] = std::fabs(p[i]) + 0.5;
    if (in.values == Values::away_from_zero) p[i] += p[i] < 0 ? -0.1 : 0.1;
  }
  return t.set_requires_grad();
}

GradcheckCase op(const std::string& name, std::vector<Input> inputs, TensorFunction fn) {
  return {name, [name, inputs, fn] {
            std::vector<Tensor> xs;
            uint64_t seed = 0;  // FNV-1a of the name: each case its own fixed values
            for (char ch : name) seed = (seed ^ uint8_t(ch)) * 1099511628211ull;
            for (const Input& in : inputs) xs.push_back(leaf(in, ++seed));
            return gradcheck(fn, xs);
          }};
}

// a op b for the same shapes and for each broadcast pattern; `b_values` keeps divisors
// away from zero.
void binary(std::vector<GradcheckCase>& cases, const std::string& name,
            Tensor (*f)(const Tensor&, const Tensor&), Values b_values = Values::normal) {
  TensorFunction fn = [f](const std::vector<Tensor>& in) { return f(in[0], in[1]); };
  const Values a_values = b_values == Values::positive ? Values::positive : Values::normal;
  cases.push_back(op(name, {{{3, 4}, a_values}, {{3, 4}, b_values}}, fn));
  cases.push_back(op(name + ":row", {{{2, 3, 4}, a_values}, {{4}, b_values}}, fn));
  cases.push_back(op(name + ":column", {{{3, 4}, a_values}, {{3, 1}, b_values}}, fn));
  cases.push_back(op(name + ":one", {{{3, 4}, a_values}, {{1}, b_values}}, fn));
  cases.push_back(op(name + ":both", {{{3, 1}, a_values}, {{1, 4}, b_values}}, fn));
  cases.push_back(op(name + ":left", {{{4}, a_values}, {{2, 3, 4}, b_values}}, fn));
}

}  // namespace

std::vector<GradcheckCase> op_gradcheck_cases() {
  using V = std::vector<Tensor>;
  const Values pos = Values::positive;
  std::vector<GradcheckCase> c;
  // elementwise
  binary(c, "add", [](const Tensor& a, const Tensor& b) { return add(a, b); });
  binary(c, "sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); });
  binary(c, "mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); });
  binary(
      c, "div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, pos);
  c.push_back(op("add:scalar", {{{3, 4}}}, [](const V& in) { return add(in[0], 1.5); }));
  c.push_back(op("sub:scalar", {{{3, 4}}}, [](const V& in) { return sub(in[0], 1.5); }));
  c.push_back(op("sub:scalar_left", {{{3, 4}}}, [](const V& in) { return sub(1.5, in[0]); }));
  c.push_back(op("mul:scalar", {{{3, 4}}}, [](const V& in) { return mul(in[0], -2.5); }));
  c.push_back(op("div:scalar", {{{3, 4}}}, [](const V& in) { return div(in[0], 4.0); }));
  c.push_back(op("div:scalar_left", {{{3, 4}, pos}}, [](const V& in) { return div(2.0, in[0]); }));
  c.push_back(op("neg", {{{3, 4}}}, [](const V& in) { return neg(in[0]); }));
  c.push_back(op("exp", {{{3, 4}}}, [](const V& in) { return exp(in[0]); }));
  c.push_back(op("log", {{{3, 4}, pos}}, [](const V& in) { return log(in[0]); }));
  c.push_back(op("sqrt", {{{3, 4}, pos}}, [](const V& in) { return sqrt(in[0]); }));
  c.push_back(op("pow", {{{3, 4}, pos}}, [](const V& in) { return pow(in[0], 2.5); }));
  c.push_back(op("pow:negative", {{{3, 4}, pos}}, [](const V& in) { return pow(in[0], -1.5); }));
  c.push_back(
      op("abs", {{{3, 4}, Values::away_from_zero}}, [](const V& in) { return abs(in[0]); }));
  c.push_back(op("tanh", {{{3, 4}}}, [](const V& in) { return tanh(in[0]); }));
  c.push_back(op("sigmoid", {{{3, 4}}}, [](const V& in) { return sigmoid(in[0]); }));
  c.push_back(
      op("relu", {{{3, 4}, Values::away_from_zero}}, [](const V& in) { return relu(in[0]); }));
  c.push_back(op("gelu", {{{3, 4}}}, [](const V& in) { return gelu(in[0]); }));
  c.push_back(
      op("gelu:tanh", {{{3, 4}}}, [](const V& in) { return gelu(in[0], GeluApprox::tanh); }));
  // reductions
  c.push_back(op("sum", {{{2, 3, 4}}}, [](const V& in) { return sum(in[0]); }));
  c.push_back(op("sum:axes", {{{2, 3, 4}}}, [](const V& in) { return sum(in[0], {0, 2}); }));
  c.push_back(op("sum:keepdim", {{{2, 3, 4}}}, [](const V& in) { return sum(in[0], {-1}, true); }));
  c.push_back(op("mean", {{{2, 3, 4}}}, [](const V& in) { return mean(in[0], {1}); }));
  c.push_back(op("max", {{{2, 3, 4}}}, [](const V& in) { return max(in[0], {-1}); }));
  c.push_back(op("max:all", {{{2, 3, 4}}}, [](const V& in) { return max(in[0]); }));
  c.push_back(op("var", {{{2, 3, 4}}}, [](const V& in) { return var(in[0], {1}, true); }));
  c.push_back(op("sum_to_shape", {{{2, 3, 4}}}, [](const V& in) {
    return sum_to_shape(in[0], {3, 1});
  }));
  // shape
  c.push_back(op("reshape", {{{2, 3, 4}}}, [](const V& in) { return in[0].reshape({6, 4}); }));
  c.push_back(op("permute", {{{2, 3, 4}}}, [](const V& in) { return permute(in[0], {2, 0, 1}); }));
  c.push_back(op("transpose", {{{2, 3, 4}}}, [](const V& in) { return transpose(in[0], 0, 2); }));
  c.push_back(op("slice", {{{2, 5, 4}}}, [](const V& in) { return slice(in[0], 1, 1, 4); }));
  c.push_back(op("select", {{{2, 5, 4}}}, [](const V& in) { return select(in[0], 1, 3); }));
  c.push_back(op("cat", {{{2, 3, 4}}, {{2, 1, 4}}}, [](const V& in) {
    return cat({in[0], in[1]}, 1);
  }));
  c.push_back(op("broadcast_to", {{{3, 1}}}, [](const V& in) {
    return broadcast_to(in[0], {2, 3, 4});
  }));
  // matrix products
  c.push_back(op("matmul", {{{3, 4}}, {{4, 5}}}, [](const V& in) { return matmul(in[0], in[1]); }));
  c.push_back(op("matmul:trans_a", {{{4, 3}}, {{4, 5}}},
                 [](const V& in) { return matmul(in[0], in[1], true); }));
  c.push_back(op("matmul:trans_b", {{{3, 4}}, {{5, 4}}},
                 [](const V& in) { return matmul(in[0], in[1], false, true); }));
  c.push_back(op("matmul:batched", {{{2, 3, 4}}, {{2, 4, 5}}},
                 [](const V& in) { return matmul(in[0], in[1]); }));
  c.push_back(op("matmul:broadcast", {{{2, 2, 3, 4}}, {{4, 5}}},
                 [](const V& in) { return matmul(in[0], in[1]); }));
  c.push_back(op("linear", {{{2, 3, 4}}, {{5, 4}}, {{5}}},
                 [](const V& in) { return linear(in[0], in[1], in[2]); }));
  c.push_back(op("linear:no_bias", {{{2, 3, 4}}, {{5, 4}}},
                 [](const V& in) { return linear(in[0], in[1]); }));
  c.push_back(op("gelu_linear", {{{2, 3, 4}}, {{5, 4}}, {{5}}},
                 [](const V& in) { return gelu_linear(in[0], in[1], in[2]); }));
  c.push_back(op("gelu_linear:tanh", {{{2, 3, 4}}, {{5, 4}}, {{5}}},
                 [](const V& in) { return gelu_linear(in[0], in[1], in[2], GeluApprox::tanh); }));
  c.push_back(op("gelu_linear:no_bias", {{{2, 3, 4}}, {{5, 4}}},
                 [](const V& in) { return gelu_linear(in[0], in[1]); }));
  c.push_back(op("gelu_linear:out_scale", {{{2, 3, 4}}, {{5, 4}}, {{5}}, {{5}}}, [](const V& in) {
    return gelu_linear(in[0], in[1], in[2], GeluApprox::none, in[3]);
  }));
  c.push_back(op("scaled_linear", {{{2, 3, 4}}, {{5, 4}}, {{5}}, {{5}}},
                 [](const V& in) { return scaled_linear(in[0], in[1], in[2], in[3]); }));
  c.push_back(op("scaled_linear:no_bias", {{{2, 3, 4}}, {{5, 4}}, {{5}}},
                 [](const V& in) { return scaled_linear(in[0], in[1], Tensor(), in[2]); }));
  c.push_back(
      op("layer_norm_linear", {{{2, 3, 6}}, {{6}}, {{6}}, {{5, 6}}, {{5}}},
         [](const V& in) { return layer_norm_linear(in[0], in[1], in[2], 1e-6, in[3], in[4]); }));
  c.push_back(op("layer_norm_linear:no_affine", {{{2, 3, 6}}, {{5, 6}}}, [](const V& in) {
    return layer_norm_linear(in[0], Tensor(), Tensor(), 1e-6, in[1]);
  }));
  c.push_back(op("affine_linear", {{{2, 3, 4}}, {{4}}, {{4}}, {{5, 4}}, {{5}}},
                 [](const V& in) { return affine_linear(in[0], in[1], in[2], in[3], in[4]); }));
  c.push_back(op("affine_linear:no_shift", {{{2, 3, 4}}, {{4}}, {{5, 4}}},
                 [](const V& in) { return affine_linear(in[0], in[1], Tensor(), in[2]); }));
  c.push_back(
      op("gelu_grn_linear", {{{2, 5, 4}}, {{4}}, {{4}}, {{3, 4}}, {{3}}, {{3}}}, [](const V& in) {
        return gelu_grn_linear(in[0], in[1], in[2], 1e-6, in[3], in[4], GeluApprox::none, in[5]);
      }));
  // fused neural-network ops
  c.push_back(op("softmax", {{{2, 3, 5}}}, [](const V& in) { return softmax(in[0]); }));
  c.push_back(op("log_softmax", {{{2, 3, 5}}}, [](const V& in) { return log_softmax(in[0]); }));
  c.push_back(op("layer_norm", {{{2, 3, 6}}, {{6}}, {{6}}},
                 [](const V& in) { return layer_norm(in[0], in[1], in[2]); }));
  c.push_back(op("layer_norm:no_affine", {{{2, 3, 6}}},
                 [](const V& in) { return layer_norm(in[0], Tensor(), Tensor()); }));
  c.push_back(op("cross_entropy", {{{4, 5}}}, [](const V& in) {
    return cross_entropy(in[0], {0, 3, 4, 1});
  }));
  c.push_back(op("cross_entropy:label_smoothing", {{{4, 5}}}, [](const V& in) {
    return cross_entropy(in[0], {2, 2, 0, 4}, 0.1);
  }));
  c.push_back(op("cross_entropy:soft_targets", {{{3, 4}}}, [](const V& in) {
    const Tensor targets =
        from_vector(std::vector<double>{0.7, 0.1, 0.1, 0.1, 0, 0, 1, 0, 0.25, 0.25, 0.25, 0.25},
                    {3, 4}, DType::f64);
    return cross_entropy(in[0], targets);
  }));
  c.push_back(op("dropout", {{{4, 6}}}, [](const V& in) {
    Rng rng(7);  // the same mask at every evaluation
    return dropout(in[0], 0.3, rng, true);
  }));
  c.push_back(op("scaled_dot_product_attention", {{{2, 2, 5, 4}}, {{2, 2, 5, 4}}, {{2, 2, 5, 4}}},
                 [](const V& in) { return scaled_dot_product_attention(in[0], in[1], in[2]); }));
  c.push_back(
      op("qkv_attention", {{{2, 5, 3 * 6}}}, [](const V& in) { return qkv_attention(in[0], 2); }));
  c.push_back(op("channel_affine", {{{2, 3, 4}}, {{4}}, {{4}}},
                 [](const V& in) { return channel_affine(in[0], in[1], in[2]); }));
  c.push_back(op("channel_affine:no_shift", {{{2, 3, 4}}, {{4}}},
                 [](const V& in) { return channel_affine(in[0], in[1]); }));
  c.push_back(op("global_response_norm", {{{2, 5, 4}}, {{4}}, {{4}}},
                 [](const V& in) { return global_response_norm(in[0], in[1], in[2]); }));
  c.push_back(op("global_response_norm:images", {{{2, 3, 3, 4}}, {{4}}, {{4}}},
                 [](const V& in) { return global_response_norm(in[0], in[1], in[2]); }));
  // Auxiliary losses: thresholds inside the N(0, 1) values, so both sides of the hinge and
  // of the peak level are present (the kinks themselves are tested on their own).
  c.push_back(op("feature_decay_loss", {{{2, 3, 5}}},
                 [](const V& in) { return feature_decay_loss(in[0], 1.0); }));
  c.push_back(op("attention_peak_loss", {{{2, 3, 5}}},
                 [](const V& in) { return attention_peak_loss(softmax(in[0] * 2.0)); }));
  c.push_back(op("patchify", {{{2, 4, 4, 3}}}, [](const V& in) { return patchify(in[0], 2); }));
  c.push_back(op("conv2d", {{{2, 5, 5, 2}}, {{3, 2, 3, 3}}, {{3}}},
                 [](const V& in) { return conv2d(in[0], in[1], in[2], 1, 1); }));
  c.push_back(op("conv2d:stride_2_odd", {{{2, 7, 5, 3}}, {{4, 3, 3, 3}}, {{4}}},
                 [](const V& in) { return conv2d(in[0], in[1], in[2], 2, 1); }));
  c.push_back(op("conv2d:no_bias", {{{1, 6, 6, 2}}, {{2, 2, 2, 2}}},
                 [](const V& in) { return conv2d(in[0], in[1], Tensor(), 2, 0); }));
  return c;
}

std::string gradcheck_family(const std::string& name) {
  return name.substr(0, name.find(':'));
}

std::vector<GradcheckCase> gradcheck_cases() {
  std::vector<GradcheckCase> all = op_gradcheck_cases();
  for (GradcheckCase& c : module_gradcheck_cases()) all.push_back(std::move(c));
  return all;
}

}  // namespace vg
