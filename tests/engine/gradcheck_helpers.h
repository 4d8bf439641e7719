// Shared helpers of the engine tests: float64 inputs and a gradcheck that reports.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "engine/autograd/gradcheck.h"
#include "engine/core/rng.h"
#include "engine/ops/ops.h"

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

// The largest |a - b| over two tensors of one shape.
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE_MESSAGE(a.shape() == b.shape(), shape_str(a.shape()), " vs ", shape_str(b.shape()));
  return max(abs(sub(a, b))).item();
}

// Checks a gradcheck result; the summary says where it failed. With VG_GRADCHECK_REPORT set
// in the environment every summary is printed, so the measured errors can be listed.
inline void expect_passed(const std::string& what, const GradcheckResult& r) {
  if (std::getenv("VG_GRADCHECK_REPORT")) MESSAGE(what, ": ", r.summary());
  INFO(what, ": ", r.summary());
  CHECK(r.passed);
  CHECK(r.checked_elements > 0);
}

// Checks fn's gradients w.r.t. every input that requires grad; the summary says where.
inline void expect_gradients(const std::string& what, const TensorFunction& fn,
                             const std::vector<Tensor>& inputs, double rtol = 1e-6) {
  GradcheckOptions options;
  options.rtol = rtol;
  expect_passed(what, gradcheck(fn, inputs, options));
}

}  // namespace vg::testing
