// The module half of the gradient-check list: every layer with respect to its input and every
// parameter, the transformer block with each option, and small ViTs end to end through the
// cross-entropy loss. Parameters get N(0, 1) values first, so that no term of a backward
// hides behind a zero (GRN's gamma and beta start at zero, LayerScale's gamma near it).
#include <cmath>
#include <memory>

#include "engine/ops/ops.h"
#include "layers/activation.h"
#include "layers/attention.h"
#include "layers/block.h"
#include "layers/conv2d.h"
#include "layers/conv_stem.h"
#include "layers/dropout.h"
#include "layers/global_response_norm.h"
#include "layers/layer_norm.h"
#include "layers/layer_scale.h"
#include "layers/learnable_scaler.h"
#include "layers/linear.h"
#include "layers/mlp.h"
#include "layers/patch_embed.h"
#include "models/gradcheck_suite.h"
#include "models/vit.h"

namespace vg {
namespace {

// The central-difference step of module checks: with 1e-6 the rounding noise of the
// projected objective alone reaches a relative error of 1e-6 on outputs of a hundred
// elements; 1e-5 sits near the optimum cbrt(machine epsilon).
constexpr double kModuleStep = 1e-5;
// A block or a whole model composes a dozen nonlinear ops, and the truncation error of the
// central difference (step^2 times the third derivative) grows with them: a few 1e-7 for
// one block. A wrong backward term is off by far more than this tolerance.
constexpr double kCompositeRtol = 1e-5;

// Vectors (scales, shifts, biases) get N(0, 1); a weight matrix gets N(0, 1 / fan_in), so
// that activations stay of order one: larger ones saturate the softmax and make the
// curvature, hence the truncation error of the central difference, needlessly large.
void randomize_parameters(nn::Module& module, uint64_t seed) {
  Rng rng(seed);
  for (const Parameter& p : module.named_parameters()) {
    Tensor target = p.tensor;
    const int64_t fan_in = target.dim() >= 2 ? target.numel() / target.size(0) : 1;
    const double std = 1.0 / std::sqrt(double(fan_in));
    for (int64_t i = 0; i < target.numel(); ++i) target.data<double>()[i] = std * rng.normal();
  }
}

Tensor input(const Shape& shape, uint64_t seed) {
  Rng rng(seed);
  return randn(shape, rng, DType::f64).set_requires_grad();
}

// Checks d forward(x) / d(x and every parameter of `module`). `before_forward` restores
// the state of any random mask, so that every evaluation sees the same one.
GradcheckResult check_module(std::shared_ptr<nn::Module> module, const Shape& x_shape,
                             std::function<Tensor(const Tensor&)> forward,
                             std::function<void()> before_forward = nullptr,
                             double rtol = GradcheckOptions{}.rtol) {
  module->to(DType::f64);
  randomize_parameters(*module, 11);
  std::vector<Tensor> inputs{input(x_shape, 12)};
  for (const Parameter& p : module->named_parameters()) inputs.push_back(p.tensor);
  GradcheckOptions options;
  options.eps = kModuleStep;
  options.rtol = rtol;
  return gradcheck(
      [&](const std::vector<Tensor>& in) {
        if (before_forward) before_forward();
        return forward(in[0]);
      },
      inputs, options);
}

// A module made by `make(rng)` and applied as module(x).
template <class M, class Make>
GradcheckCase layer(const std::string& name, Shape x_shape, Make make) {
  return {name, [x_shape, make] {
            Rng rng(3);
            std::shared_ptr<M> m = make(rng);
            return check_module(m, x_shape, [m](const Tensor& x) { return m->forward(x); });
          }};
}

// Dropout or DropPath with drop probability p, in training mode, its mask drawn afresh
// from the same generator state at every evaluation.
template <class M>
GradcheckCase masked(const std::string& name, double p, Shape x_shape) {
  return {name, [p, x_shape] {
            auto rng = std::make_shared<Rng>(4);
            const RngState start = rng->state();
            auto m = std::make_shared<M>(p, rng);
            return check_module(
                m, x_shape, [m](const Tensor& x) { return m->forward(x); },
                [rng, start] { rng->set_state(start); });
          }};
}

struct BlockOptions {
  nn::NormKind norm = nn::NormKind::layernorm;
  double layerscale = 0;
  bool grn = false;
  double drop_path = 0, dropout = 0;
};

GradcheckCase block(const std::string& name, BlockOptions o) {
  return {name, [o] {
            Rng rng(3);
            auto drop_rng = std::make_shared<Rng>(9);
            const RngState start = drop_rng->state();
            auto b = std::make_shared<nn::Block>(8, 2, 2.0, true, o.norm, o.layerscale, o.grn,
                                                 o.drop_path, o.dropout, rng, drop_rng);
            return check_module(
                b, {2, 5, 8}, [b](const Tensor& x) { return b->forward(x); },
                [drop_rng, start] { drop_rng->set_state(start); }, kCompositeRtol);
          }};
}

// A ViT on 8x8 images with 4x4 patches (4 tokens and the class token), trained through the
// cross-entropy of its logits.
GradcheckCase vit(const std::string& name, ViTConfig config) {
  return {name, [config] {
            auto model = std::make_shared<ViT>(config, 5);
            const RngState start = model->dropout_rng().state();
            const std::vector<int32_t> labels{0, 2};
            return check_module(
                model, {2, config.img_size, config.img_size, config.in_chans},
                [model, labels](const Tensor& images) {
                  return cross_entropy(model->forward(images), labels, 0.1);
                },
                [model, start] { model->dropout_rng().set_state(start); }, kCompositeRtol);
          }};
}

ViTConfig small_vit() {
  ViTConfig c;
  c.img_size = 8;
  c.patch_size = 4;
  c.in_chans = 2;
  c.num_classes = 3;
  c.embed_dim = 8;
  c.depth = 2;
  c.num_heads = 2;
  c.mlp_ratio = 2.0;
  return c;
}

}  // namespace

std::vector<GradcheckCase> module_gradcheck_cases() {
  using namespace nn;
  std::vector<GradcheckCase> c;
  c.push_back(layer<LayerScale>("LayerScale", {2, 3, 4},
                                [](Rng&) { return std::make_shared<LayerScale>(4); }));
  c.push_back(layer<LayerScale>("LayerScale:images", {2, 3, 3, 4},
                                [](Rng&) { return std::make_shared<LayerScale>(4); }));
  c.push_back(layer<GlobalResponseNorm>("GlobalResponseNorm", {2, 5, 4}, [](Rng&) {
    return std::make_shared<GlobalResponseNorm>(4);
  }));
  c.push_back(layer<GlobalResponseNorm>("GlobalResponseNorm:images", {2, 3, 3, 4}, [](Rng&) {
    return std::make_shared<GlobalResponseNorm>(4);
  }));
  c.push_back(layer<LearnableScaler>("LearnableScaler", {2, 3, 4}, [](Rng& rng) {
    return std::make_shared<LearnableScaler>(4, rng);
  }));
  c.push_back(layer<LearnableScaler2d>("LearnableScaler2d", {2, 4, 3, 3}, [](Rng& rng) {
    return std::make_shared<LearnableScaler2d>(4, rng);
  }));
  c.push_back(layer<LayerNorm>("LayerNorm", {2, 3, 6},
                               [](Rng&) { return std::make_shared<LayerNorm>(6); }));
  c.push_back(layer<Linear>("Linear", {2, 3, 4},
                            [](Rng& rng) { return std::make_shared<Linear>(4, 5, true, rng); }));
  c.push_back(layer<Linear>("Linear:no_bias", {2, 3, 4},
                            [](Rng& rng) { return std::make_shared<Linear>(4, 5, false, rng); }));
  c.push_back(layer<GELU>("GELU", {2, 3, 4}, [](Rng&) { return std::make_shared<GELU>(); }));
  c.push_back(layer<GELU>("GELU:tanh", {2, 3, 4},
                          [](Rng&) { return std::make_shared<GELU>(GeluApprox::tanh); }));
  c.push_back(layer<Attention>("Attention", {2, 5, 8}, [](Rng& rng) {
    return std::make_shared<Attention>(8, 2, true, rng);
  }));
  c.push_back(layer<Attention>("Attention:no_qkv_bias", {2, 5, 8}, [](Rng& rng) {
    return std::make_shared<Attention>(8, 2, false, rng);
  }));
  c.push_back(layer<Mlp>("Mlp", {2, 5, 8},
                         [](Rng& rng) { return std::make_shared<Mlp>(8, 16, false, 0.0, rng); }));
  c.push_back(layer<Mlp>("Mlp:grn", {2, 5, 8},
                         [](Rng& rng) { return std::make_shared<Mlp>(8, 16, true, 0.0, rng); }));
  c.push_back(layer<PatchEmbed>("PatchEmbed", {2, 8, 8, 2}, [](Rng& rng) {
    return std::make_shared<PatchEmbed>(8, 4, 2, 6, rng);
  }));
  c.push_back(layer<PatchProjection>("PatchProjection", {2, 4, 32}, [](Rng& rng) {
    return std::make_shared<PatchProjection>(2, 6, 4, rng);
  }));
  c.push_back(layer<Conv2d>("Conv2d", {2, 5, 6, 2}, [](Rng& rng) {
    return std::make_shared<Conv2d>(2, 3, 3, 2, 1, rng);
  }));
  c.push_back(layer<ConvStem>("ConvStem", {2, 7, 7, 2}, [](Rng& rng) {
    const std::vector<StemStage> stages{StemStage(3, 1), StemStage(4)};  // stride 1, then 2
    return std::make_shared<ConvStem>(7, 2, stages, rng);
  }));
  c.push_back(layer<ConvStem>("ConvStem:layernorm", {2, 7, 7, 2}, [](Rng& rng) {
    // Four and five channels: a LayerNorm over two or three is nearly a sign function, whose
    // central differences are too ill-conditioned to compare.
    const std::vector<StemStage> stages{StemStage(4, 1), StemStage(5)};
    return std::make_shared<ConvStem>(7, 2, stages, rng, StemNorm::layernorm);
  }));
  for (const double p : {0.0, 0.5}) {
    const std::string variant = p == 0 ? "" : ":training";  // p 0: the identity
    c.push_back(masked<DropPath>("DropPath" + variant, p, {4, 3, 2}));
    c.push_back(masked<Dropout>("Dropout" + variant, p, {2, 3, 4}));
  }
  c.push_back(block("Block", {}));
  c.push_back(block("Block:layerscale", {.layerscale = 1e-4}));
  c.push_back(block("Block:grn", {.grn = true}));
  c.push_back(block("Block:learnable_scaler", {.norm = NormKind::learnable_scaler}));
  c.push_back(block("Block:all", {.norm = NormKind::learnable_scaler,
                                  .layerscale = 0.1,
                                  .grn = true,
                                  .drop_path = 0.3,
                                  .dropout = 0.2}));
  const ViTConfig base = small_vit();
  c.push_back(vit("ViT:token", base));
  ViTConfig avg = base;
  avg.global_pool = GlobalPool::avg;
  avg.layerscale = LayerScaleSetting::by_depth();
  c.push_back(vit("ViT:avg+layerscale", avg));
  ViTConfig scaler = base;
  scaler.norm = NormKind::learnable_scaler;
  scaler.grn = true;
  scaler.layerscale = LayerScaleSetting::fixed(1e-4);
  scaler.drop_path_rate = 0.2;
  scaler.dropout = 0.1;
  c.push_back(vit("ViT:learnable_scaler+grn+drop", scaler));
  ViTConfig stem = base;  // 8 -> 4 through the stem, 2x2 patches: 4 tokens again
  stem.stem = {3};
  stem.patch_size = 2;
  c.push_back(vit("ViT:stem", stem));
  ViTConfig normed = stem;  // a stride-1 stage too: 8 -> 8 -> 4
  normed.stem = {nn::StemStage(4, 1), nn::StemStage(5)};
  normed.stem_norm = nn::StemNorm::layernorm;
  c.push_back(vit("ViT:stem+norm", normed));
  return c;
}

}  // namespace vg
