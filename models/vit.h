// The Vision Transformer of timm (VisionTransformer with class token and learned positional
// embedding), depth-configurable, with the options this project studies: LayerScale,
// LearnableScaler in place of every LayerNorm, GRN in the MLPs, and a convolutional stem
// before the patch embedding.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/rng.h"
#include "layers/block.h"
#include "layers/conv_stem.h"
#include "layers/dropout.h"
#include "layers/linear.h"
#include "layers/module.h"
#include "layers/patch_embed.h"
#include "models/vit_config.h"

namespace vg {

// The auxiliary losses of the LearnableScaler training script (semantics of its
// --train-feature-decay and --attn-extra-loss), with independent weights: the hinge after
// each residual add of every block, the peakedness loss on the first attn_layers blocks.
struct AuxLossConfig {
  double feature_decay = 0;        // weight of each block's two hinge terms
  double feature_threshold = 200;  // on |x| of the residual stream
  double attn_extra_loss = 0;      // weight of each block's attention-peakedness term
  int64_t attn_layers = 6;         // blocks 0..attn_layers-1 (all when >= depth)
  bool any() const { return feature_decay > 0 || attn_extra_loss > 0; }
};

class ViT : public nn::Module {
 public:
  // Builds and initialises the model as timm does (trunc_normal(.02) Linear weights, zero
  // biases, cls_token ~ N(0, 1e-6^2), pos_embed ~ trunc_normal(.02)), drawing from a
  // generator seeded with `seed`. Dropout and drop-path masks come from dropout_rng().
  explicit ViT(const ViTConfig& config, uint64_t seed = 0);

  // images (B, img_size, img_size, in_chans) -> logits (B, num_classes).
  Tensor forward(const Tensor& images) override;
  // The logits, and in *extra the weighted sum of the auxiliary losses over the blocks (a
  // scalar; zero when `aux` turns none on).
  Tensor forward(const Tensor& images, const AuxLossConfig& aux, Tensor* extra);

  const ViTConfig& config() const { return config_; }
  // The generator behind every dropout and drop-path mask (saved in checkpoints).
  Rng& dropout_rng() { return *dropout_rng_; }
  int64_t depth() const { return static_cast<int64_t>(blocks_.size()); }
  nn::Block& block(int64_t i) { return *blocks_.at(i); }
  // Gives every block LayerScale (gamma = init_value), keeping all other weights, and records
  // it in config() so that a checkpoint of the model rebuilds to the same parameters. A model
  // that already has LayerScale is refused.
  void add_layerscale(double init_value);
  const nn::Block& block(int64_t i) const { return *blocks_.at(i); }

 private:
  ViTConfig config_;
  std::shared_ptr<Rng> dropout_rng_;
  Tensor cls_token_, pos_embed_;
  std::shared_ptr<nn::ConvStem> stem_;  // null without a stem
  std::shared_ptr<nn::PatchEmbed> patch_embed_;
  std::shared_ptr<nn::Dropout> pos_drop_;
  std::vector<std::shared_ptr<nn::Block>> blocks_;
  std::shared_ptr<nn::TokenNorm> norm_;  // "norm" (token pooling) or "fc_norm" (avg pooling)
  std::shared_ptr<nn::Linear> head_;
};

}  // namespace vg
