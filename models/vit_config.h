// The configuration of a ViT: plain data that round-trips to JSON, plus named presets. Its
// choices are parsed once, where JSON or flags come in, into the enums below; their JSON
// spellings are those of the checkpoints ("layernorm", "auto", "token", ...).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "layers/conv_stem.h"
#include "layers/token_norm.h"

namespace vg {

using nn::NormKind;  // layernorm | learnable_scaler

enum class GlobalPool {
  token,  // the class token after the final norm
  avg,    // the mean of the patch tokens, then fc_norm
};

// LayerScale on every block: none, auto (CaiT's init value for the depth) or a fixed init.
struct LayerScaleSetting {
  enum class Mode { none, by_depth, fixed };
  Mode mode = Mode::none;
  double init_value = 0;  // Mode::fixed only

  static LayerScaleSetting none() { return {}; }
  static LayerScaleSetting by_depth() { return {Mode::by_depth, 0}; }
  static LayerScaleSetting fixed(double init_value) { return {Mode::fixed, init_value}; }
  // "none" | "auto" | a number in (0, 10]; anything else is a vg::Error.
  static LayerScaleSetting parse(const std::string& text);
  std::string str() const;  // "none", "auto" or the shortest form of the number ("1e-4")
  bool enabled() const { return mode != Mode::none; }
  bool operator==(const LayerScaleSetting&) const = default;
};

// The JSON and flag spellings of the enums; parse_* throw a vg::Error naming `key`.
std::string to_string(NormKind kind);
std::string to_string(GlobalPool pool);
NormKind parse_norm(const std::string& text, const std::string& key = "norm");
GlobalPool parse_global_pool(const std::string& text, const std::string& key = "global_pool");
// The stem's spelling: "none" (empty) or "conv:32,64" (the channels of each stage, stride 2),
// a stage of stride 1 marked "s1": "conv:32s1,64".
std::string stem_str(const std::vector<nn::StemStage>& stem);
std::vector<nn::StemStage> parse_stem(const std::string& text, const std::string& key = "stem");
// The stem's norm: "none" or "layernorm".
std::string to_string(nn::StemNorm norm);
nn::StemNorm parse_stem_norm(const std::string& text, const std::string& key = "stem_norm");

struct ViTConfig {
  int64_t img_size = 28;
  int64_t patch_size = 4;
  int64_t in_chans = 1;
  int64_t num_classes = 10;
  int64_t embed_dim = 64;
  int64_t depth = 6;
  int64_t num_heads = 4;
  double mlp_ratio = 2.0;
  bool qkv_bias = true;
  NormKind norm = NormKind::layernorm;
  LayerScaleSetting layerscale;  // none
  bool grn = false;              // GlobalResponseNorm in every MLP
  GlobalPool global_pool = GlobalPool::token;
  double drop_path_rate = 0.0;  // rises linearly from 0 at block 0 to this at the last
  double dropout = 0.0;         // after the positional embedding, in attention and MLP
  // A ConvStem before the patch embedding (layers/conv_stem.h): the output channels and stride
  // of its 3x3 convolutions, each followed by GELU. Empty: none, the images themselves are cut
  // into patches. Written "none", "conv:32,64" or "conv:32s1,64" in JSON; a file without it
  // has none.
  std::vector<nn::StemStage> stem;
  // With a stem, a LayerNorm over the channels after each convolution (before its GELU):
  // "stem_norm": "none" or "layernorm" in JSON; a file without it has none.
  nn::StemNorm stem_norm = nn::StemNorm::none;

  // Throws vg::Error naming the field when a value is out of range or inconsistent
  // (embed_dim not divisible by num_heads, img_size or the stem's output not divisible by
  // patch_size, ...).
  void validate() const;
  // The LayerScale init value: 0 for none; auto follows CaiT (Touvron et al. 2021):
  // depth <= 18 -> 0.1, depth 24 -> 1e-5, deeper -> 1e-6. The paper names only those
  // points; we use 1e-5 for depths 19 to 24 and 1e-6 from 25 on.
  double layerscale_init() const;
  // The side of the map the patch embedding cuts: img_size, or the stem's output side
  // (img_size halved per stage, rounded up); and its channels.
  int64_t feature_size() const;
  int64_t feature_chans() const { return stem.empty() ? in_chans : stem.back().channels; }
  int64_t num_patches() const {
    return (feature_size() / patch_size) * (feature_size() / patch_size);
  }

  nlohmann::json to_json() const;
  // Every key is optional (defaults above) but must be known and of the right type; the
  // result is validated. Errors name the key: "ViTConfig: 'depth' must be an integer".
  static ViTConfig from_json(const nlohmann::json& j);
  bool operator==(const ViTConfig&) const = default;
};

// The named configurations (see preset_names()); unknown names are a vg::Error listing them.
ViTConfig preset(const std::string& name);
std::vector<std::string> preset_names();
std::string preset_description(const std::string& name);

}  // namespace vg
