#include "tools/model_flags.h"

#include "engine/core/error.h"
#include "models/run_data.h"
#include "tools/config_file.h"
#include "tools/model_names.h"

namespace vg::tools {

std::vector<Flag> model_flags() {
  std::string presets;  // from the list itself, so that a new preset shows up here
  for (const std::string& name : preset_names()) presets += (presets.empty() ? "" : ", ") + name;
  return {{"--preset", "NAME", "a named model (default fmnist-tiny): " + presets},
          {"--config", "FILE",
           "a run's config.json (model and training recipe) or a ViTConfig JSON file"},
          {"--model", "NAME",
           "a model named as timm or the LearnableScaler reference does "
           "(vit_learnable_scaler_embed_dim192_patch16_head3_depth36, vit_tiny_patch16_224)"},
          {"--img-size", "N", "image side; smaller data images are padded with black to it"},
          {"--depth", "N", "number of blocks"},
          {"--dim", "N", "embedding dimension"},
          {"--heads", "N", "attention heads"},
          {"--patch", "N", "patch size"},
          {"--mlp-ratio", "X", "MLP hidden size / dim"},
          {"--norm", "KIND", "layernorm | learnable_scaler"},
          {"--layerscale", "V", "none | auto | an init value such as 1e-4"},
          {"--grn", "", "Global Response Norm in every MLP"},
          {"--pool", "KIND", "token | avg"},
          {"--drop-path", "R", "stochastic depth rate of the last block"},
          {"--dropout", "R", "dropout rate"},
          {"--stem", "SPEC",
           "none | conv:C1,C2,...: a 3x3 stride-2 convolution + GELU per entry before the patch "
           "embedding, stride 1 where an entry ends in s1 (e.g. conv:32,64 or conv:32s1,64 with "
           "--patch 1)"},
          {"--stem-norm", "KIND",
           "none | layernorm: a LayerNorm over the channels after each stem "
           "convolution"}};
}

void model_aliases(ArgParser& args) {
  args.alias("--drop", "--dropout");  // timm's names
}

ViTConfig model_from_flags(const ArgParser& args, const data::DataShape* data) {
  if (int(args.has("--preset")) + int(args.has("--config")) + int(args.has("--model")) > 1)
    args.fail("give one of --preset, --config and --model");
  ViTConfig c;
  try {
    if (args.has("--config")) {
      const ConfigFile file = read_config_file(args.text("--config"));
      try {
        c = ViTConfig::from_json(file.model);
      } catch (const Error& e) {
        throw Error(file.path + (file.train ? ": section 'model': " : ": ") + e.what());
      }
    } else if (args.has("--model")) {
      c = model_from_name(args.text("--model"), preset("fmnist-tiny"));
    } else {
      c = preset(args.text("--preset", "fmnist-tiny"));
    }
  } catch (const Error& e) {
    args.fail(e.what());
  }
  c.img_size = args.integer("--img-size", c.img_size, 1, 4096);
  c.depth = args.integer("--depth", c.depth, 1, 1024);
  c.embed_dim = args.integer("--dim", c.embed_dim, 1, 65536);
  c.num_heads = args.integer("--heads", c.num_heads, 1, 4096);
  c.patch_size = args.integer("--patch", c.patch_size, 1, 4096);
  c.mlp_ratio = args.number("--mlp-ratio", c.mlp_ratio, 1e-3, 64);
  c.norm = parse_norm(args.choice("--norm", to_string(c.norm), {"layernorm", "learnable_scaler"}));
  try {
    c.layerscale = LayerScaleSetting::parse(args.text("--layerscale", c.layerscale.str()));
  } catch (const Error& e) {
    args.fail(e.what());
  }
  if (args.on("--grn")) c.grn = true;
  c.global_pool =
      parse_global_pool(args.choice("--pool", to_string(c.global_pool), {"token", "avg"}));
  c.drop_path_rate = args.number("--drop-path", c.drop_path_rate, 0, 0.999);
  c.dropout = args.number("--dropout", c.dropout, 0, 0.999);
  try {
    c.stem = parse_stem(args.text("--stem", stem_str(c.stem)));
  } catch (const Error& e) {
    args.fail(e.what());
  }
  c.stem_norm =
      parse_stem_norm(args.choice("--stem-norm", to_string(c.stem_norm), {"none", "layernorm"}));
  try {
    if (data && !args.has("--config"))
      c = fit_model_to_data(c, *data, args.has("--img-size") || args.has("--model"));
    c.validate();
  } catch (const Error& e) {
    args.fail(e.what());
  }
  return c;
}

}  // namespace vg::tools
