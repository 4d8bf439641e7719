// `vitgrad demo`: a short tour of the engine that a user can read alongside its output.
#include <cstdio>
#include <iostream>

#include "engine/autograd/gradcheck.h"
#include "engine/core/rng.h"
#include "engine/ops/ops.h"
#include "tools/args.h"

namespace vg::tools {

int run_demo(const std::vector<std::string>& args) {
  ArgParser parser("demo", "vitgrad demo", {});
  parser.parse(args);
  if (parser.help_requested()) {
    std::cout << parser.help()
              << "Builds mean(tanh(x * gamma)), runs backward() and checks the gradients.\n";
    return 0;
  }
  Rng rng(0);
  // A tiny function of two tensors: a per-channel scale (broadcast over rows), then tanh.
  Tensor x = randn({4, 3}, rng, DType::f64).set_requires_grad().set_name("x");
  Tensor gamma = full({3}, 0.5, DType::f64).set_requires_grad().set_name("gamma");
  Tensor loss = mean(tanh(mul(x, gamma)));
  loss.backward();
  std::cout << "x      = " << x << "\n"
            << "gamma  = " << gamma << "\n"
            << "loss   = mean(tanh(x * gamma)) = " << loss.item() << "\n"
            << "dloss/dgamma = " << gamma.grad() << "   (summed over the 4 rows)\n";
  GradcheckResult r = gradcheck(
      [](const std::vector<Tensor>& in) { return mean(tanh(mul(in[0], in[1]))); }, {x, gamma});
  std::cout << "gradcheck: " << r.summary() << "\n";
  return r.passed ? 0 : 1;
}

}  // namespace vg::tools
