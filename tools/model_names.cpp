#include "tools/model_names.h"

#include <regex>

#include "engine/core/error.h"

namespace vg::tools {
namespace {

// timm's vit_tiny_patch16_224 defaults that every name shares.
ViTConfig timm_defaults(const ViTConfig& base) {
  ViTConfig c = base;
  c.mlp_ratio = 4;
  c.qkv_bias = true;
  c.global_pool = GlobalPool::token;
  c.norm = NormKind::layernorm;
  c.layerscale = LayerScaleSetting::none();
  c.grn = false;
  return c;
}

int64_t number(const std::string& digits) { return std::stoll(digits); }

}  // namespace

ViTConfig model_from_name(const std::string& name, const ViTConfig& base) {
  static const std::regex reference(
      R"(vit_(learnable_scaler_|layer_scale_)?embed_dim(\d{1,5})_patch(\d{1,4})_head(\d{1,4})_depth(\d{1,4}))");
  static const std::regex timm(R"(vit_(tiny|small|base|large)_patch(\d{1,4})_(\d{1,5}))");
  std::smatch m;
  ViTConfig c = timm_defaults(base);
  if (std::regex_match(name, m, reference)) {
    if (m[1] == "learnable_scaler_") c.norm = NormKind::learnable_scaler;
    if (m[1] == "layer_scale_") c.layerscale = LayerScaleSetting::fixed(1e-5);
    c.embed_dim = number(m[2]);
    c.patch_size = number(m[3]);
    c.num_heads = number(m[4]);
    c.depth = number(m[5]);
    return c;
  }
  if (std::regex_match(name, m, timm)) {
    struct Size { const char* name; int64_t dim, heads, depth; };
    for (const Size& s : {Size{"tiny", 192, 3, 12}, Size{"small", 384, 6, 12},
                          Size{"base", 768, 12, 12}, Size{"large", 1024, 16, 24}})
      if (m[1] == s.name) c.embed_dim = s.dim, c.num_heads = s.heads, c.depth = s.depth;
    c.patch_size = number(m[2]);
    c.img_size = number(m[3]);
    return c;
  }
  throw Error("model name '" + name +
              "' is not one vitgrad reads: vit_[learnable_scaler_|layer_scale_]embed_dim{E}_"
              "patch{P}_head{H}_depth{D} or vit_{tiny|small|base|large}_patch{P}_{image size}");
}

}  // namespace vg::tools
