// Example 2: a layer of your own, its gradient check, and a ViT block that uses it.
// DyT, "Dynamic Tanh" (Zhu et al. 2025, "Transformers without Normalization"), takes the
// place of LayerNorm: y = weight * tanh(alpha * x) + bias, alpha one learnable scalar (0.5 at
// the start), weight and bias one value per channel. A layer is a Module: it registers its
// parameters (so named_parameters(), state_dict() and the optimisers find them) and writes
// its forward with the engine's ops, which record the graph: no backward to write.
// Run: ./build/example_custom_layer   (it exits with 1 if a check fails)
#include <iostream>
#include <memory>
#include <vector>

#include "engine/autograd/gradcheck.h"
#include "engine/ops/ops.h"
#include "layers/attention.h"
#include "layers/mlp.h"  // and through both, layers/module.h

using vg::Tensor;

class DyT : public vg::nn::Module {
 public:
  explicit DyT(int64_t dim) : Module("DyT"), dim_(dim) {  // norm-like: no weight decay
    alpha_ = register_parameter("alpha", vg::full({1}, 0.5), {.no_weight_decay = true});
    weight_ = register_parameter("weight", vg::ones({dim}), {.no_weight_decay = true});
    bias_ = register_parameter("bias", vg::zeros({dim}), {.no_weight_decay = true});
  }
  // x (..., dim) -> the same shape. Called as norm(x), which records the ops under its name.
  Tensor forward(const Tensor& x) override {
    vg::check(x.size(-1) == dim_, "DyT(dim=", dim_, "): input last axis is ", x.size(-1));
    return vg::tanh(x * alpha_) * weight_ + bias_;
  }

 private:
  int64_t dim_;
  Tensor alpha_, weight_, bias_;
};

// timm's pre-norm block from the library's Attention and Mlp, with DyT as both norms.
class DyTBlock : public vg::nn::Module {
 public:
  DyTBlock(int64_t dim, int64_t num_heads, vg::Rng& rng) : Module("DyTBlock") {
    norm1 = register_module("norm1", std::make_shared<DyT>(dim));
    attn = register_module("attn", std::make_shared<vg::nn::Attention>(dim, num_heads, true, rng));
    norm2 = register_module("norm2", std::make_shared<DyT>(dim));
    mlp = register_module("mlp", std::make_shared<vg::nn::Mlp>(dim, 2 * dim, false, 0.0, rng));
  }
  Tensor forward(const Tensor& x) override {  // x (B, T, dim) -> (B, T, dim)
    Tensor h = x + (*attn)((*norm1)(x));      // module(x), not forward(x): see DyT::forward
    return h + (*mlp)((*norm2)(h));
  }
  std::shared_ptr<DyT> norm1, norm2;
  std::shared_ptr<vg::nn::Attention> attn;
  std::shared_ptr<vg::nn::Mlp> mlp;
};

int main() {
  vg::Rng rng(0);
  DyT norm(8);                // dim 8
  DyTBlock block(8, 2, rng);  // dim 8, 2 heads
  std::cout << "DyTBlock(dim=8, heads=2): " << block.num_parameters() << " parameters:";
  for (const vg::Parameter& p : block.named_parameters()) std::cout << " " << p.name;
  std::cout << "\n";
  // d module(x) / d(x and every parameter) in float64: gradcheck perturbs its inputs in place.
  auto gradcheck_module = [&rng](const char* what, auto& module) {
    module.to(vg::DType::f64);
    std::vector<Tensor> inputs{vg::randn({2, 5, 8}, rng, vg::DType::f64).set_requires_grad()};
    for (const vg::Parameter& p : module.named_parameters()) inputs.push_back(p.tensor);
    auto forward = [&](const std::vector<Tensor>& in) { return module(in[0]); };
    vg::GradcheckResult r = vg::gradcheck(forward, inputs);
    std::cout << what << " gradcheck: " << r.summary() << "\n";
    return r.passed;
  };
  return gradcheck_module("DyT", norm) && gradcheck_module("DyTBlock", block) ? 0 : 1;
}
