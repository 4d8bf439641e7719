// Shared helpers of the engine tests that compare with PyTorch fixtures (tests/fixtures/*.json,
// written by the make_*_fixtures.py scripts next to them).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/tensor.h"

namespace vg::testing {

// The parsed fixture file `name` from VG_FIXTURES_DIR.
inline nlohmann::json load_fixture(const std::string& name) {
  const std::string path = std::string(VG_FIXTURES_DIR) + "/" + name;
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open fixture ", path);
  return nlohmann::json::parse(in);
}

// A tensor from a fixture entry {"shape": [...], "data": [...]}.
inline Tensor fixture_tensor(const nlohmann::json& j, DType dtype) {
  return from_vector(j.at("data").get<std::vector<double>>(), j.at("shape").get<Shape>(), dtype);
}

// Checks actual against the fixture entry, element by element, with the error
// |a - e| / max(1, |e|); on failure it names the worst element.
inline void expect_close(const std::string& what, const Tensor& actual,
                         const nlohmann::json& expected, double tol) {
  REQUIRE_MESSAGE(actual.defined(), what, ": undefined tensor");
  const Shape shape = expected.at("shape").get<Shape>();
  const std::vector<double> want = expected.at("data").get<std::vector<double>>();
  INFO(what, ": shape ", shape_str(actual.shape()), ", expected ", shape_str(shape));
  REQUIRE(actual.shape() == shape);
  const std::vector<double> got = actual.to_vector();
  size_t worst = 0;
  double worst_err = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i]));
    if (std::isnan(err)) {
      worst_err = INFINITY;
      worst = i;
      break;
    }
    if (err > worst_err) {
      worst_err = err;
      worst = i;
    }
  }
  INFO(what, ": worst element ", worst, " is ", got[worst], ", expected ", want[worst], " (error ",
       worst_err, ", tolerance ", tol, ")");
  CHECK(worst_err <= tol);
}

}  // namespace vg::testing
