// Example 1: a function, its gradient, and a check of that gradient.
//
// The function is the loss of logistic regression on four points:
//   p = sigmoid(x @ w + b)                      x (4, 3), w (3, 1), b (1)
//   L = mean(-(y log p + (1 - y) log(1 - p)))   y (4, 1): the labels, 0 or 1
// Every op below records itself as it runs; L.backward() walks that record in reverse and
// leaves dL/dw in w.grad() and dL/db in b.grad(). We then check backward's answer twice:
// against the textbook formula dL/dw = x^T (p - y) / N, and with gradcheck, which nudges
// every input element by +-1e-5 and compares the slope it sees with backward's.
//
// Run: ./build/example_gradient   (it exits with 1 if a check fails)
#include <iostream>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/autograd/gradcheck.h"
#include "engine/core/rng.h"
#include "engine/ops/ops.h"

using vg::Tensor;

// The loss of the parameters in[0] = w and in[1] = b: gradcheck wants a function of a list.
Tensor logistic_loss(const std::vector<Tensor>& in, const Tensor& x, const Tensor& y) {
  // b has shape (1) and broadcasts over the 4 rows; autograd sums its gradient back down.
  Tensor p = vg::sigmoid(vg::matmul(x, in[0]) + in[1]);
  return vg::mean(-(y * vg::log(p) + (1.0 - y) * vg::log(1.0 - p)));
}

int main() {
  vg::Rng rng(0);  // every random value comes from an explicit generator: same run, same bits
  // float64 throughout: a central difference loses half the digits, so float32 would leave
  // too few to judge a gradient by.
  Tensor x = vg::randn({4, 3}, rng, vg::DType::f64);  // data: needs no gradient
  Tensor y = vg::from_vector(std::vector<double>{1, 0, 0, 1}, {4, 1});
  Tensor w = vg::randn({3, 1}, rng, vg::DType::f64).set_requires_grad();
  Tensor b = vg::zeros({1}, vg::DType::f64).set_requires_grad();

  Tensor loss = logistic_loss({w, b}, x, y);
  loss.backward();  // fills w.grad() and b.grad(); x asked for none, so it gets none
  std::cout << "loss  = " << loss.item() << "\n"
            << "dL/dw = " << w.grad() << "\n"
            << "dL/db = " << b.grad() << "\n";

  // The same gradient from the formula. NoGradGuard: nothing in this scope is recorded, as
  // these values are only looked at, never differentiated.
  double worst = 0;
  {
    vg::NoGradGuard no_grad;
    Tensor p = vg::sigmoid(vg::matmul(x, w) + b);
    Tensor by_hand = vg::matmul(x, p - y, /*trans_a=*/true) / 4.0;  // x^T (p - y) / N
    worst = vg::max(vg::abs(by_hand - w.grad())).item();
  }
  const bool formula_ok = worst < 1e-12;
  std::cout << "x^T (p - y) / N " << (formula_ok ? "matches" : "DIFFERS FROM") << " dL/dw"
            << " (largest difference " << worst << ")\n";

  // gradcheck perturbs w and b in place, runs the function again for each element, and
  // restores them; x and y reach the function through the capture.
  auto f = [&](const std::vector<Tensor>& in) { return logistic_loss(in, x, y); };
  vg::GradcheckResult check = vg::gradcheck(f, {w, b});
  std::cout << "gradcheck: " << check.summary() << "\n";
  return formula_ok && check.passed ? 0 : 1;
}
