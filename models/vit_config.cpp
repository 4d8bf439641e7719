#include "models/vit_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "engine/core/error.h"
#include "layers/conv_stem.h"

namespace vg {
namespace {

using nlohmann::json;

// More parameters than this (4 GB of float32) is not a model this engine is meant for.
constexpr double kMaxParameters = 1e9;
// Past 8 stages every image of up to 256 pixels is one pixel wide; wider stages than 4096
// channels are not a stem.
constexpr size_t kMaxStemStages = 8;
constexpr int64_t kMaxStemChannels = 4096;
// An image's channels: far above any real image, low enough that no product of sizes overflows.
constexpr int64_t kMaxInChans = 65536;

bool valid_init_value(double v) {
  return std::isfinite(v) && v > 0 && v <= 10;
}

void stem_error(const std::string& key, const std::string& got) {
  throw Error(cat_str("ViTConfig: '", key, "' must be none or conv:C1,C2,... with 1 to ",
                      kMaxStemStages, " channel counts in [1, ", kMaxStemChannels,
                      "], each with s1 after it for stride 1, got '", got, "'"));
}

void layerscale_error(const std::string& got) {
  throw Error(cat_str("ViTConfig: 'layerscale' must be none, auto or a positive number, got '",
                      got, "'"));
}

struct PresetEntry {
  const char* name;
  const char* description;
  ViTConfig config;
};

std::vector<PresetEntry> presets() {
  std::vector<PresetEntry> list;
  ViTConfig tiny;  // the defaults: patch 4 (49 tokens + cls), dim 64, depth 6, heads 4, mlp 2
  list.push_back({"fmnist-tiny", "28x28x1, patch 4, dim 64, depth 6, 4 heads, MLP x2 (~210k "
                                 "parameters): the quick Fashion-MNIST model",
                  tiny});
  ViTConfig deep = tiny;
  deep.patch_size = 7;
  deep.depth = 24;
  deep.layerscale = LayerScaleSetting::by_depth();
  list.push_back({"fmnist-deep", "patch 7, dim 64, depth 24, LayerScale auto (1e-5): a deep "
                                 "ViT that costs about as much as fmnist-tiny",
                  deep});
  ViTConfig ls36 = tiny;
  ls36.patch_size = 7;
  ls36.depth = 36;
  ls36.norm = NormKind::learnable_scaler;
  list.push_back({"fmnist-ls36", "patch 7, dim 64, depth 36, every LayerNorm replaced by "
                                 "LearnableScaler, no LayerScale (the LearnableScaler recipe)",
                  ls36});
  ViTConfig recipe = ls36;
  recipe.depth = 24;
  list.push_back({"fmnist-ls-recipe", "patch 7, dim 64, depth 24, LearnableScaler everywhere, no "
                                      "LayerScale; `train` also takes the recipe's training "
                                      "options (LAMB, schedule, auxiliary losses)",
                  recipe});
  return list;
}

template <class T>
T field(const json& j, const char* key, T fallback, const char* type_name) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  bool ok = false;
  if constexpr (std::is_same_v<T, bool>) ok = v.is_boolean();
  else if constexpr (std::is_same_v<T, int64_t>) ok = v.is_number_integer();
  else if constexpr (std::is_same_v<T, double>) ok = v.is_number();
  else ok = v.is_string();
  check(ok, "ViTConfig: '", key, "' must be ", type_name, ", got ", v.dump());
  return v.get<T>();
}

}  // namespace

LayerScaleSetting LayerScaleSetting::parse(const std::string& text) {
  if (text == "none") return none();
  if (text == "auto") return by_depth();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !valid_init_value(v)) layerscale_error(text);
  return fixed(v);
}

std::string LayerScaleSetting::str() const {
  if (mode == Mode::none) return "none";
  if (mode == Mode::by_depth) return "auto";
  // The shortest text that reads back as the same double, with the exponent unpadded:
  // 1e-4 is "1e-4" (not "0.0001" or "1e-04"), 0.1 is "0.1".
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, init_value);
  std::string text(buffer, end);
  const size_t e = text.find('e');
  if (e != std::string::npos) {
    size_t digits = e + 1 + (text[e + 1] == '-' || text[e + 1] == '+');
    if (text[e + 1] == '+') text.erase(e + 1, 1), --digits;
    while (digits + 1 < text.size() && text[digits] == '0') text.erase(digits, 1);
  }
  return text;
}

std::string to_string(NormKind kind) {
  return kind == NormKind::layernorm ? "layernorm" : "learnable_scaler";
}

std::string to_string(GlobalPool pool) {
  return pool == GlobalPool::token ? "token" : "avg";
}

NormKind parse_norm(const std::string& text, const std::string& key) {
  if (text == "layernorm") return NormKind::layernorm;
  if (text == "learnable_scaler") return NormKind::learnable_scaler;
  throw Error(cat_str("ViTConfig: '", key, "' must be layernorm or learnable_scaler, got '", text,
                      "'"));
}

GlobalPool parse_global_pool(const std::string& text, const std::string& key) {
  if (text == "token") return GlobalPool::token;
  if (text == "avg") return GlobalPool::avg;
  throw Error(cat_str("ViTConfig: '", key, "' must be token or avg, got '", text, "'"));
}

std::string stem_str(const std::vector<nn::StemStage>& stem) {
  if (stem.empty()) return "none";
  std::string text = "conv:";
  for (size_t i = 0; i < stem.size(); ++i) {
    if (i) text += ',';
    text += std::to_string(stem[i].channels);
    if (stem[i].stride != 2) text += 's' + std::to_string(stem[i].stride);
  }
  return text;
}

std::vector<nn::StemStage> parse_stem(const std::string& text, const std::string& key) {
  if (text == "none") return {};
  if (!text.starts_with("conv:")) stem_error(key, text);
  std::vector<nn::StemStage> stem;
  for (size_t begin = 5; begin <= text.size();) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string_view entry(text.data() + begin, end - begin);
    const bool stride_one = entry.ends_with("s1");
    const std::string_view number = stride_one ? entry.substr(0, entry.size() - 2) : entry;
    int64_t channels = 0;
    const auto [stop, error] =
        std::from_chars(number.data(), number.data() + number.size(), channels);
    if (error != std::errc() || stop != number.data() + number.size() || channels < 1 ||
        channels > kMaxStemChannels || stem.size() == kMaxStemStages)
      stem_error(key, text);
    stem.push_back(nn::StemStage(channels, stride_one ? 1 : 2));
    begin = end + 1;
  }
  return stem;
}

std::string to_string(nn::StemNorm norm) {
  return norm == nn::StemNorm::layernorm ? "layernorm" : "none";
}

nn::StemNorm parse_stem_norm(const std::string& text, const std::string& key) {
  if (text == "none") return nn::StemNorm::none;
  if (text == "layernorm") return nn::StemNorm::layernorm;
  throw Error(cat_str("ViTConfig: '", key, "' must be none or layernorm, got '", text, "'"));
}

int64_t ViTConfig::feature_size() const {
  return nn::ConvStem::output_size(img_size, stem);
}

void ViTConfig::validate() const {
  auto positive = [](const char* key, int64_t v) {
    check(v > 0, "ViTConfig: '", key, "' must be positive, got ", v);
  };
  positive("img_size", img_size);
  positive("patch_size", patch_size);
  positive("in_chans", in_chans);
  positive("num_classes", num_classes);
  positive("embed_dim", embed_dim);
  positive("depth", depth);
  positive("num_heads", num_heads);
  check(img_size <= 4096 && embed_dim <= 65536 && depth <= 1024 && num_classes <= 1000000,
        "ViTConfig: sizes are unreasonably large");
  check(in_chans <= kMaxInChans, "ViTConfig: 'in_chans' must be at most ", kMaxInChans, ", got ",
        in_chans);
  check(stem.size() <= kMaxStemStages, "ViTConfig: 'stem' has ", stem.size(),
        " stages, more than ", kMaxStemStages);
  for (const nn::StemStage& stage : stem) {
    check(stage.channels >= 1 && stage.channels <= kMaxStemChannels,
          "ViTConfig: 'stem' channels must be in [1, ", kMaxStemChannels, "], got ",
          stem_str(stem));
    check(stage.stride == 1 || stage.stride == 2, "ViTConfig: a 'stem' stage's stride must be 1 "
          "or 2, got ", stem_str(stem));
  }
  check(stem_norm == nn::StemNorm::none || !stem.empty(),
        "ViTConfig: 'stem_norm' is layernorm but there is no stem");
  if (stem.empty())
    check(img_size % patch_size == 0, "ViTConfig: img_size ", img_size,
          " is not divisible by patch_size ", patch_size);
  else
    check(feature_size() % patch_size == 0, "ViTConfig: the stem's ", feature_size(), "x",
          feature_size(), " output (img_size ", img_size, ", ", stem.size(),
          " stages) is not divisible by patch_size ", patch_size);
  check(embed_dim % num_heads == 0, "ViTConfig: embed_dim ", embed_dim,
        " is not divisible by num_heads ", num_heads);
  check(std::isfinite(mlp_ratio) && mlp_ratio > 0 && mlp_ratio <= 64 &&
            static_cast<int64_t>(embed_dim * mlp_ratio) > 0,
        "ViTConfig: 'mlp_ratio' must be positive, got ", mlp_ratio);
  // Checked before anything is allocated: a config asking for more than a CPU engine can
  // hold must be an error, not an allocation the kernel grants and later kills us for.
  const double E = double(embed_dim), tokens = double(num_patches() + 1);
  double parameters = E * double(feature_chans()) * double(patch_size * patch_size) + tokens * E +
                            double(depth) * (4 * E * E + 2 * E * E * mlp_ratio) +
                            E * double(num_classes);
  const double per_channel = stem_norm == nn::StemNorm::layernorm ? 3 : 1;  // bias (+ norm)
  for (size_t i = 0; i < stem.size(); ++i)
    parameters += double(stem[i].channels) *
                  (9.0 * double(i ? stem[i - 1].channels : in_chans) + per_channel);
  check(parameters <= kMaxParameters, "ViTConfig: the model would have ", parameters,
        " parameters, more than the limit of ", kMaxParameters, " (depth ", depth, ", embed_dim ",
        embed_dim, ")");
  if (layerscale.mode == LayerScaleSetting::Mode::fixed && !valid_init_value(layerscale.init_value))
    layerscale_error(layerscale.str());
  check(drop_path_rate >= 0 && drop_path_rate < 1, "ViTConfig: 'drop_path_rate' must be in "
        "[0, 1), got ", drop_path_rate);
  check(dropout >= 0 && dropout < 1, "ViTConfig: 'dropout' must be in [0, 1), got ", dropout);
}

double ViTConfig::layerscale_init() const {
  switch (layerscale.mode) {
    case LayerScaleSetting::Mode::none: return 0.0;
    case LayerScaleSetting::Mode::by_depth: return depth <= 18 ? 0.1 : depth <= 24 ? 1e-5 : 1e-6;
    case LayerScaleSetting::Mode::fixed: break;
  }
  return layerscale.init_value;
}

json ViTConfig::to_json() const {
  return {{"img_size", img_size},
          {"patch_size", patch_size},
          {"in_chans", in_chans},
          {"num_classes", num_classes},
          {"embed_dim", embed_dim},
          {"depth", depth},
          {"num_heads", num_heads},
          {"mlp_ratio", mlp_ratio},
          {"qkv_bias", qkv_bias},
          {"norm", to_string(norm)},
          {"layerscale", layerscale.str()},
          {"grn", grn},
          {"global_pool", to_string(global_pool)},
          {"drop_path_rate", drop_path_rate},
          {"dropout", dropout},
          {"stem", stem_str(stem)},
          {"stem_norm", to_string(stem_norm)}};
}

ViTConfig ViTConfig::from_json(const json& j) {
  check(j.is_object(), "ViTConfig: expected a JSON object, got ", j.type_name());
  const json known = ViTConfig{}.to_json();
  for (const auto& [key, value] : j.items())
    check(known.contains(key), "ViTConfig: unknown key '", key, "'");
  ViTConfig c;
  c.img_size = field(j, "img_size", c.img_size, "an integer");
  c.patch_size = field(j, "patch_size", c.patch_size, "an integer");
  c.in_chans = field(j, "in_chans", c.in_chans, "an integer");
  c.num_classes = field(j, "num_classes", c.num_classes, "an integer");
  c.embed_dim = field(j, "embed_dim", c.embed_dim, "an integer");
  c.depth = field(j, "depth", c.depth, "an integer");
  c.num_heads = field(j, "num_heads", c.num_heads, "an integer");
  c.mlp_ratio = field(j, "mlp_ratio", c.mlp_ratio, "a number");
  c.qkv_bias = field(j, "qkv_bias", c.qkv_bias, "true or false");
  c.norm = parse_norm(field(j, "norm", to_string(c.norm), "a string"));
  if (j.contains("layerscale") && j.at("layerscale").is_number()) {
    const double v = j.at("layerscale").get<double>();
    if (!valid_init_value(v)) layerscale_error(json(v).dump());
    c.layerscale = LayerScaleSetting::fixed(v);
  } else {
    c.layerscale = LayerScaleSetting::parse(
        field(j, "layerscale", c.layerscale.str(), "none, auto or a number"));
  }
  c.grn = field(j, "grn", c.grn, "true or false");
  c.global_pool = parse_global_pool(field(j, "global_pool", to_string(c.global_pool), "a string"));
  c.drop_path_rate = field(j, "drop_path_rate", c.drop_path_rate, "a number");
  c.dropout = field(j, "dropout", c.dropout, "a number");
  c.stem = parse_stem(field(j, "stem", stem_str(c.stem), "a string"));
  c.stem_norm = parse_stem_norm(field(j, "stem_norm", to_string(c.stem_norm), "a string"));
  c.validate();
  return c;
}

ViTConfig preset(const std::string& name) {
  std::string known;
  for (const PresetEntry& p : presets()) {
    if (p.name == name) return p.config;
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  throw Error("unknown preset '" + name + "' (known: " + known + ")");
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const PresetEntry& p : presets()) names.push_back(p.name);
  return names;
}

std::string preset_description(const std::string& name) {
  for (const PresetEntry& p : presets())
    if (p.name == name) return p.description;
  return "";
}

}  // namespace vg
