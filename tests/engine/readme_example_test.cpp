// The example at the top of README.md, compiled and run; a second test checks that the
// README shows exactly these lines.
#include <doctest/doctest.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "engine/autograd/gradcheck.h"
#include "engine/core/rng.h"
#include "engine/ops/ops.h"

static vg::GradcheckResult readme_example(vg::Tensor& w_grad) {
  // README-BEGIN
  vg::Rng rng(0);
  vg::Tensor x = vg::randn({4, 3}, rng, vg::DType::f64).set_requires_grad();
  vg::Tensor w = vg::full({3}, 0.5, vg::DType::f64).set_requires_grad();
  vg::Tensor loss = vg::mean(vg::tanh(x * w));  // w broadcasts over the 4 rows
  loss.backward();                               // fills x.grad() and w.grad()
  auto f = [](const std::vector<vg::Tensor>& in) { return vg::mean(vg::tanh(in[0] * in[1])); };
  vg::GradcheckResult check = vg::gradcheck(f, {x, w});  // analytic vs central differences
  std::cout << w.grad() << "\n" << check.summary() << "\n";
  // README-END
  w_grad = w.grad();
  return check;
}

TEST_CASE("the README example runs and its gradients pass gradcheck") {
  vg::Tensor w_grad;
  const vg::GradcheckResult r = readme_example(w_grad);
  CHECK(r.passed);
  CHECK(w_grad.shape() == vg::Shape{3});
}

TEST_CASE("the README shows the example verbatim") {
  std::ifstream source(std::string(VG_SOURCE_DIR) + "/tests/engine/readme_example_test.cpp");
  std::ifstream readme(std::string(VG_SOURCE_DIR) + "/README.md");
  REQUIRE(source.good());
  REQUIRE(readme.good());
  std::stringstream s, r;
  s << source.rdbuf();
  r << readme.rdbuf();
  const std::string text = s.str();
  const size_t begin = text.find('\n', text.find("// README-" "BEGIN")) + 1;
  const size_t end = text.rfind('\n', text.find("// README-" "END"));
  std::string block;  // the lines without their 2-space indent
  std::istringstream lines(text.substr(begin, end - begin));
  for (std::string line; std::getline(lines, line);) block += line.substr(2) + "\n";
  INFO("README.md must contain:\n", block);
  CHECK(r.str().find(block) != std::string::npos);
}
