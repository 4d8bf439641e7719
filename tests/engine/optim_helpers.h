// Shared helpers of the optimiser tests: parameters with chosen values and gradients.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/core/rng.h"
#include "engine/optim/param_groups.h"
#include "tests/engine/bits_helpers.h"

namespace vg::testing {

// A parameter leaf with the given values (float64 unless told).
inline Parameter make_param(const std::string& name, const std::vector<double>& values,
                            const Shape& shape, bool no_weight_decay = false,
                            DType dtype = DType::f64) {
  Parameter p;
  p.name = name;
  p.tensor = from_vector(values, shape, dtype).set_requires_grad();
  p.no_weight_decay = no_weight_decay;
  return p;
}

// A parameter drawn from N(0, 1) with a fixed seed.
inline Parameter random_param(const std::string& name, const Shape& shape, uint64_t seed,
                              bool no_weight_decay = false, DType dtype = DType::f64) {
  Rng rng(seed);
  Parameter p;
  p.name = name;
  p.tensor = randn(shape, rng, dtype).set_requires_grad();
  p.no_weight_decay = no_weight_decay;
  return p;
}

inline void set_grad(Parameter& p, const std::vector<double>& values) {
  p.tensor.set_grad(from_vector(values, p.tensor.shape(), p.tensor.dtype()));
}

inline optim::ParamGroup make_group(const std::string& name, ParameterList params, double lr,
                                    double weight_decay = 0) {
  optim::ParamGroup g;
  g.name = name;
  g.params = std::move(params);
  g.lr = lr;
  g.weight_decay = weight_decay;
  return g;
}

inline std::vector<double> values(const Parameter& p) {
  return p.tensor.to_vector();
}

inline double l2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

inline std::vector<double> minus(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

}  // namespace vg::testing
