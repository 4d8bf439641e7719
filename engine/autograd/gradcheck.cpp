#include "engine/autograd/gradcheck.h"

#include <algorithm>
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
    out << "; worst at input " << worst_input << " element " << worst_element << " (analytic "
        << analytic << ", numeric " << numeric << ")";
  return out.str();
}

namespace {

// The inputs a gradcheck perturbs: float64 leaves that require grad.
void check_inputs(const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    check(t.dtype() == DType::f64, "gradcheck: input ", i, " is ", dtype_name(t.dtype()),
          "; gradients are checked in float64 (use .to(DType::f64))");
    check(t.is_leaf(), "gradcheck: input ", i, " is not a leaf tensor");
  }
}

// L = sum(y * R) for the function's output y and a fixed random R of y's shape, drawn at the
// first call: one scalar that depends on every element of y, whose gradient with respect to
// y is R itself.
class Projection {
 public:
  Projection(const TensorFunction& fn, const std::vector<Tensor>& inputs, uint64_t seed)
      : fn_(fn), inputs_(inputs), seed_(seed) {}

  // y, checked to be float64 and of the same shape at every call.
  Tensor output() {
    Tensor y = fn_(inputs_);
    check(y.defined() && y.dtype() == DType::f64,
          "gradcheck: the function must return a float64 tensor");
    if (!r_.defined()) {
      Rng rng(seed_);
      r_ = randn(y.shape(), rng, DType::f64);
    }
    check(y.shape() == r_.shape(), "gradcheck: the output shape changed between calls");
    return y;
  }
  double value() {
    const Tensor y = output();
    const double *yv = y.data<double>(), *r = r_.data<double>();
    double total = 0;
    for (int64_t k = 0; k < y.numel(); ++k) total += yv[k] * r[k];
    return total;
  }
  const Tensor& r() const { return r_; }

 private:
  const TensorFunction& fn_;
  const std::vector<Tensor>& inputs_;
  uint64_t seed_;
  Tensor r_;
};

// dL/d(input) for every input, from one backward() of y with gradient R; the inputs' .grad
// are left as they were found.
std::vector<Tensor> analytic_gradients(Projection& L, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> saved_grads;
  for (const Tensor& t : inputs) {
    saved_grads.push_back(t.defined() ? t.grad() : Tensor());
    if (t.defined() && t.requires_grad()) const_cast<Tensor&>(t).zero_grad();
  }
  const Tensor y = L.output();
  y.backward(L.r());
  std::vector<Tensor> analytic;
  for (const Tensor& t : inputs) analytic.push_back(t.defined() ? t.grad() : Tensor());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined()) const_cast<Tensor&>(inputs[i]).set_grad(saved_grads[i]);
  return analytic;
}

// Each element of input i against its central difference (L(x + eps) - L(x - eps)) / 2 eps,
// the element restored after; the worst relative error so far kept in r.
void compare_input(Projection& L, Tensor x, const Tensor& analytic, int64_t i,
                   const GradcheckOptions& options, GradcheckResult& r) {
  double* p = x.data<double>();
  for (int64_t j = 0; j < x.numel(); ++j) {
    const double original = p[j];
    p[j] = original + options.eps;
    const double up = L.value();
    p[j] = original - options.eps;
    const double down = L.value();
    p[j] = original;
    const double numeric = (up - down) / (2 * options.eps);
    const double exact = analytic.defined() ? analytic.data<double>()[j] : 0.0;
    const double abs_err = std::fabs(exact - numeric);
    const double rel_err =
        abs_err / std::max({std::fabs(exact), std::fabs(numeric), options.denominator_floor});
    r.checked_elements++;
    r.max_abs_err = std::max(r.max_abs_err, abs_err);
    if (rel_err > r.max_rel_err || std::isnan(rel_err)) {
      r.max_rel_err = std::isnan(rel_err) ? INFINITY : rel_err;
      r.worst_input = i;
      r.worst_element = j;
      r.analytic = exact;
      r.numeric = numeric;
    }
  }
}

}  // namespace

GradcheckResult gradcheck(const TensorFunction& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  check_inputs(inputs);
  Projection L(fn, inputs, options.seed);
  const std::vector<Tensor> analytic = analytic_gradients(L, inputs);
  GradcheckResult r;
  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad())
      compare_input(L, inputs[i], analytic[i], static_cast<int64_t>(i), options, r);
  r.passed = r.max_rel_err <= options.rtol;
  return r;
}

}  // namespace vg
