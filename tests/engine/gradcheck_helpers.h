// Shared helpers of the engine tests: float64 inputs and a gradcheck that reports.
#pragma once

#include <doctest/doctest.h>

#include "engine/gradcheck.h"
#include "engine/ops.h"
#include "engine/rng.h"

namespace vg::testing {

// A float64 leaf that requires grad, N(0,1) (shifted by `offset`) from a fixed seed.
inline Tensor variable(const Shape& shape, uint64_t seed, double offset = 0.0) {
  Rng rng(seed);
  Tensor t = randn(shape, rng, DType::f64);
  if (offset != 0.0) {
    double* p = t.data<double>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] += offset;
  }
  return t.set_requires_grad();
}

// Checks fn's gradients w.r.t. every input that requires grad; the summary says where.
inline void expect_gradients(const std::string& what, const TensorFunction& fn,
                             const std::vector<Tensor>& inputs, double rtol = 1e-6) {
  GradcheckOptions options;
  options.rtol = rtol;
  const GradcheckResult r = gradcheck(fn, inputs, options);
  INFO(what, ": ", r.summary());
  CHECK(r.passed);
  CHECK(r.checked_elements > 0);
}

}  // namespace vg::testing
