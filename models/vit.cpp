#include "models/vit.h"

#include "engine/ops/ops.h"

namespace vg {

ViT::ViT(const ViTConfig& config, uint64_t seed)
    : nn::Module("ViT"), config_(config), dropout_rng_(std::make_shared<Rng>(seed ^ 0x5eedULL)) {
  config_.validate();
  Rng rng(seed);
  const int64_t E = config_.embed_dim;
  const nn::NormKind norm = config_.norm;
  // Registration order = timm's state_dict order: cls_token, pos_embed, patch_embed, blocks,
  // norm, head. The stem, when there is one, comes before patch_embed, so a model without it
  // draws exactly the numbers it drew before stems existed.
  cls_token_ =
      register_parameter("cls_token", randn({1, 1, E}, rng) * 1e-6, {.no_weight_decay = true});
  pos_embed_ = register_parameter("pos_embed",
                                  trunc_normal({1, config_.num_patches() + 1, E}, rng, 0.0, 0.02),
                                  {.no_weight_decay = true});
  if (!config_.stem.empty())
    stem_ = register_module(
        "stem", std::make_shared<nn::ConvStem>(config_.img_size, config_.in_chans, config_.stem,
                                               rng, config_.stem_norm));
  patch_embed_ = register_module(
      "patch_embed", std::make_shared<nn::PatchEmbed>(config_.feature_size(), config_.patch_size,
                                                      config_.feature_chans(), E, rng));
  pos_drop_ =
      register_module("pos_drop", std::make_shared<nn::Dropout>(config_.dropout, dropout_rng_));
  const double ls_init = config_.layerscale_init();
  for (int64_t i = 0; i < config_.depth; ++i) {
    // timm: torch.linspace(0, drop_path_rate, depth)
    const double dpr =
        config_.depth > 1 ? config_.drop_path_rate * double(i) / double(config_.depth - 1) : 0.0;
    blocks_.push_back(
        register_module("blocks." + std::to_string(i),
                        std::make_shared<nn::Block>(E, config_.num_heads, config_.mlp_ratio,
                                                    config_.qkv_bias, norm, ls_init, config_.grn,
                                                    dpr, config_.dropout, rng, dropout_rng_)));
  }
  norm_ = register_module(config_.global_pool == GlobalPool::token ? "norm" : "fc_norm",
                          nn::make_norm(norm, E, rng));
  head_ = register_module("head", std::make_shared<nn::Linear>(E, config_.num_classes, true, rng));
}

Tensor ViT::forward(const Tensor& images) {
  return forward(images, AuxLossConfig{}, nullptr);
}

Tensor ViT::forward(const Tensor& images, const AuxLossConfig& aux, Tensor* extra) {
  Tensor x = (*patch_embed_)(stem_ ? (*stem_)(images) : images);  // (B, N, E)
  const int64_t B = x.size(0);
  // timm's order: the class token goes first, then the positional embedding is added.
  x = cat({broadcast_to(cls_token_, {B, 1, config_.embed_dim}), x}, 1);
  x = (*pos_drop_)(add(x, pos_embed_));
  if (extra) *extra = Tensor();
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (!extra || !aux.any()) {
      x = (*blocks_[i])(x);
      continue;
    }
    nn::BlockAuxLoss block_aux{aux.feature_decay, aux.feature_threshold,
                               int64_t(i) < aux.attn_layers ? aux.attn_extra_loss : 0.0};
    x = (*blocks_[i])(x, block_aux, extra);
  }
  if (extra && !extra->defined()) *extra = zeros({}, x.dtype());
  if (config_.global_pool == GlobalPool::token) {
    x = select((*norm_)(x), 1, 0);  // the class token after the final norm
  } else {
    x = mean(slice(x, 1, 1, x.size(1)), {1});  // patch tokens only, as timm
    x = (*norm_)(x);
  }
  return (*head_)(x);
}

void ViT::add_layerscale(double init_value) {
  check(!config_.layerscale.enabled(), "ViT::add_layerscale: the model already has LayerScale (",
        config_.layerscale.str(), ")");
  ViTConfig changed = config_;
  changed.layerscale = LayerScaleSetting::fixed(init_value);
  changed.validate();  // a positive, finite value, or a clear error before anything changes
  nn::apply_layerscale_to_blocks(*this, init_value);
  config_ = changed;
}

}  // namespace vg
