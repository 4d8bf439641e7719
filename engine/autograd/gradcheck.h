// gradcheck: compares the gradients that backward() computes with central differences, in
// float64. A library function, so students can check their own functions:
//
//   vg::Tensor x = vg::randn({3, 4}, rng, vg::DType::f64).set_requires_grad();
//   auto r = vg::gradcheck([](const std::vector<vg::Tensor>& in) { return vg::tanh(in[0]); },
//                          {x});
//   // r.passed, r.max_rel_err, r.summary()
//
// A non-scalar output y is reduced to L = sum(y * R) with a fixed random R, so every output
// element takes part. The inputs are perturbed in place and restored, so a parameter that
// the function reaches by itself (a module's weight) can be checked by listing it as an
// input: every listed tensor that requires grad is checked, element by element.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace vg {

struct GradcheckOptions {
  // Step of the central difference: 1e-5 balances truncation error (~eps^2) against the
  // rounding noise of the objective (~1e-16 / eps), which dominates at 1e-6.
  double eps = 1e-5;
  double rtol = 1e-6;             // passes when max_rel_err <= rtol
  double denominator_floor = 1e-3;  // rel = |a - n| / max(|a|, |n|, floor)
  uint64_t seed = 1234;           // for the projection R
};

struct GradcheckResult {
  bool passed = true;
  double max_abs_err = 0.0;
  double max_rel_err = 0.0;
  int64_t worst_input = -1;    // index into the inputs
  int64_t worst_element = -1;  // flat index into that input
  double analytic = 0.0;       // the two values at the worst element
  double numeric = 0.0;
  int64_t checked_elements = 0;
  std::string summary() const;  // one readable line
};

using TensorFunction = std::function<Tensor(const std::vector<Tensor>&)>;

// The inputs must be float64 leaves; only those that require grad are checked.
GradcheckResult gradcheck(const TensorFunction& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace vg
