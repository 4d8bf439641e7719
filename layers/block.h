// The pre-norm transformer block of timm's VisionTransformer:
//   x = x + drop_path(ls1(attn(norm1(x))))
//   x = x + drop_path(ls2(mlp(norm2(x))))
// norm is LayerNorm (eps 1e-6) or LearnableScaler; ls1/ls2 (LayerScale) exist only when
// LayerScale is on; the MLP may carry a GlobalResponseNorm on its hidden features.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/rng.h"
#include "layers/attention.h"
#include "layers/dropout.h"
#include "layers/layer_scale.h"
#include "layers/mlp.h"
#include "layers/module.h"
#include "layers/token_norm.h"

namespace vg::nn {

// The auxiliary losses of the LearnableScaler recipe as one block adds them; 0 turns one off.
struct BlockAuxLoss {
  double feature_decay = 0;        // weight of feature_decay_loss after each residual add
  double feature_threshold = 200;  // the hinge's threshold on |x|
  double attn_peak = 0;            // weight of attention_peak_loss on this block's attention
};

class Block : public Module {
 public:
  // layerscale_init 0 means no LayerScale (timm's test on truthiness).
  Block(int64_t dim, int64_t num_heads, double mlp_ratio, bool qkv_bias, NormKind norm,
        double layerscale_init, bool use_grn, double drop_path, double dropout, Rng& rng,
        std::shared_ptr<Rng> drop_rng);

  // x (B, T, dim) -> (B, T, dim).
  Tensor forward(const Tensor& x) override;
  // The same, adding the block's weighted auxiliary losses to *extra (a scalar, undefined
  // until the first term). The attention runs step by step only when attn_peak > 0.
  Tensor forward(const Tensor& x, const BlockAuxLoss& aux, Tensor* extra);
  using Module::operator();
  Tensor operator()(const Tensor& x, const BlockAuxLoss& aux, Tensor* extra) {
    return run([&] { return forward(x, aux, extra); });
  }

  // Inserts ls1 and ls2 (gamma = init_value) into a block built without them.
  void add_layerscale(double init_value);
  bool has_layerscale() const { return ls1_ != nullptr; }
  // On (the default): the branches run fused (layers/fusion.h). Off: every module runs on
  // its own, as the reference writes the block; the tests compare the two.
  void set_fused(bool on) { fused_ = on; }
  bool fused() const { return fused_; }
  Attention& attn() { return *attn_; }
  Mlp& mlp() { return *mlp_; }
  LayerScale* ls1() { return ls1_.get(); }
  LayerScale* ls2() { return ls2_.get(); }
  TokenNorm& norm1() { return *norm1_; }
  TokenNorm& norm2() { return *norm2_; }

 private:
  int64_t dim_;
  bool fused_ = true;
  std::shared_ptr<TokenNorm> norm1_, norm2_;
  std::shared_ptr<Attention> attn_;
  std::shared_ptr<Mlp> mlp_;
  std::shared_ptr<LayerScale> ls1_, ls2_;
  std::shared_ptr<DropPath> drop_path1_, drop_path2_;
};

// Adds LayerScale to every Block of `model` that has none, keeping all other weights: the
// model gains 2 x dim parameters per block.
void apply_layerscale_to_blocks(Module& model, double init_value);

}  // namespace vg::nn
