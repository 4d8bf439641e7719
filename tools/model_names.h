// Model names as timm and the LearnableScaler reference spell them, read into a ViTConfig:
//   vit_learnable_scaler_embed_dim192_patch16_head3_depth36   every LayerNorm a LearnableScaler
//   vit_layer_scale_embed_dim120_patch16_head3_depth24        LayerScale, init 1e-5
//   vit_embed_dim192_patch16_head3_depth12                    the LayerNorm baseline
//   vit_tiny_patch16_224, vit_small_..., vit_base_...         timm's sizes and image size
// Each starts from vit_tiny_patch16_224's defaults (MLP x4, qkv bias, class token).
#pragma once

#include <string>
#include <vector>

#include "models/vit_config.h"

namespace vg::tools {

// The configuration `name` describes over `base`, whose in_chans, num_classes and img_size
// (unless the name gives one) are kept; an unknown name is a vg::Error listing the forms.
ViTConfig model_from_name(const std::string& name, const ViTConfig& base);

}  // namespace vg::tools
