#include "engine/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "engine/autograd/autograd.h"
#include "engine/core/rng.h"

namespace vg {

std::string GradcheckResult::summary() const {
  std::ostringstream out;
  out << (passed ? "passed" : "FAILED") << ": max_abs_err " << max_abs_err << ", max_rel_err "
      << max_rel_err << " over " << checked_elements << " elements";
  if (worst_input >= 0)
    out << "; worst at input " << worst_input << " element " << worst_element
        << " (analytic " << analytic << ", numeric " << numeric << ")";
  return out.str();
}

GradcheckResult gradcheck(const TensorFunction& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    check(t.dtype() == DType::f64, "gradcheck: input ", i, " is ", dtype_name(t.dtype()),
          "; gradients are checked in float64 (use .to(DType::f64))");
    check(t.is_leaf(), "gradcheck: input ", i, " is not a leaf tensor");
  }
  // The projection R turns any output y into one scalar, sum(y * R), that depends on every
  // element; its gradient with respect to y is R itself.
  Tensor projection;
  auto output = [&]() {
    Tensor y = fn(inputs);
    check(y.defined() && y.dtype() == DType::f64, "gradcheck: the function must return a "
                                                  "float64 tensor");
    if (!projection.defined()) {
      Rng rng(options.seed);
      projection = randn(y.shape(), rng, DType::f64);
    }
    check(y.shape() == projection.shape(), "gradcheck: the output shape changed between calls");
    return y;
  };
  auto objective = [&]() {
    const Tensor y = output();
    const double* yv = y.data<double>();
    const double* r = projection.data<double>();
    double total = 0;
    for (int64_t k = 0; k < y.numel(); ++k) total += yv[k] * r[k];
    return total;
  };

  std::vector<Tensor> saved_grads;
  for (const Tensor& t : inputs) {
    saved_grads.push_back(t.defined() ? t.grad() : Tensor());
    if (t.defined() && t.requires_grad()) const_cast<Tensor&>(t).zero_grad();
  }
  output().backward(projection);
  std::vector<Tensor> analytic;
  for (const Tensor& t : inputs) analytic.push_back(t.defined() ? t.grad() : Tensor());

  GradcheckResult r;
  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    double* p = x.data<double>();
    const Tensor& a = analytic[i];
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double original = p[j];
      p[j] = original + options.eps;
      const double up = objective();
      p[j] = original - options.eps;
      const double down = objective();
      p[j] = original;
      const double numeric = (up - down) / (2 * options.eps);
      const double exact = a.defined() ? a.data<double>()[j] : 0.0;
      const double abs_err = std::fabs(exact - numeric);
      const double rel_err = abs_err / std::max({std::fabs(exact), std::fabs(numeric),
                                                 options.denominator_floor});
      r.checked_elements++;
      r.max_abs_err = std::max(r.max_abs_err, abs_err);
      if (rel_err > r.max_rel_err || std::isnan(rel_err)) {
        r.max_rel_err = std::isnan(rel_err) ? INFINITY : rel_err;
        r.worst_input = static_cast<int64_t>(i);
        r.worst_element = j;
        r.analytic = exact;
        r.numeric = numeric;
      }
    }
  }
  r.passed = r.max_rel_err <= options.rtol;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined()) const_cast<Tensor&>(inputs[i]).set_grad(saved_grads[i]);
  return r;
}

}  // namespace vg
