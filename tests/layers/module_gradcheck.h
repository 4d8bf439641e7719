// Helpers of the layer tests: gradient checks of a module with respect to its input and
// every parameter, in float64.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "layers/module.h"
#include "tests/engine/gradcheck_helpers.h"

namespace vg::testing {

// Gives every parameter of a float64 module N(0, scale^2) values, so that no term of the
// backward hides behind a zero (GRN's gamma and beta start at zero, LayerScale's gamma near
// it). A scale below 1 keeps deep compositions (attention, blocks) away from softmax
// saturation, where central differences lose their digits.
inline void randomize_parameters(nn::Module& module, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  for (const Parameter& p : module.named_parameters()) {
    REQUIRE(p.tensor.dtype() == DType::f64);
    const Tensor values = randn(p.tensor.shape(), rng, DType::f64);
    Tensor target = p.tensor;
    for (int64_t i = 0; i < values.numel(); ++i)
      target.data<double>()[i] = scale * values.data<double>()[i];
  }
}

// x followed by every parameter of the module: the gradcheck inputs that cover them all.
inline std::vector<Tensor> input_and_parameters(const Tensor& x, const nn::Module& module) {
  std::vector<Tensor> inputs{x};
  for (const Parameter& p : module.named_parameters()) inputs.push_back(p.tensor);
  return inputs;
}

// The central-difference step of the layer checks. With the default 1e-6 the rounding noise
// of the projected objective (about 1e-16 * |L| / step) alone reaches a relative error of
// 1e-6 on outputs of a hundred elements; 1e-5 sits near the optimum cbrt(machine eps).
constexpr double kLayerGradcheckStep = 1e-5;

// gradcheck with the layer step; the summary says where it failed.
inline void expect_gradients_at_step(const std::string& what, const TensorFunction& fn,
                                     const std::vector<Tensor>& inputs,
                                     double step = kLayerGradcheckStep) {
  GradcheckOptions options;
  options.eps = step;
  expect_passed(what, gradcheck(fn, inputs, options));
}

// Checks d forward(x) / d(x and every parameter); forward reaches the parameters itself
// (gradcheck perturbs them in place).
template <class Forward>
void expect_module_gradients(const std::string& what, const nn::Module& module, const Tensor& x,
                             Forward forward) {
  expect_gradients_at_step(
      what, [&](const std::vector<Tensor>& in) { return forward(in[0]); },
      input_and_parameters(x, module));
}

}  // namespace vg::testing
