#include "models/weights_file.h"

namespace vg {

SafeTensors safetensors_of(const Checkpoint& weights, const ParameterList& params) {
  SafeTensors file;
  file.tensors = weights.model;
  nlohmann::json no_weight_decay = nlohmann::json::array();
  for (const Parameter& p : params)
    if (p.no_weight_decay) no_weight_decay.push_back(p.name);
  file.metadata = {{"format", "pt"},
                   {kSafetensorsConfigKey, weights.config.dump()},
                   {kSafetensorsStepKey, std::to_string(weights.step)},
                   {kSafetensorsNoWeightDecayKey, no_weight_decay.dump()}};
  return file;
}

Checkpoint checkpoint_from_safetensors(const SafeTensors& file, const std::string& source,
                                       const std::optional<ViTConfig>& config) {
  Checkpoint c;
  c.model = file.tensors;
  if (config) {
    c.config = config->to_json();
    return c;
  }
  const auto it = file.metadata.find(kSafetensorsConfigKey);
  check(it != file.metadata.end(), source, ": no '", kSafetensorsConfigKey,
        "' in the metadata (not a vitgrad export): give the model's config, e.g. "
        "vitgrad import ", source, " --config CONFIG.json -o model.json");
  try {
    c.config = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception&) {
    throw Error(cat_str(source, ": metadata '", kSafetensorsConfigKey, "' is not JSON"));
  }
  // Validated here, so a bad config names the file and the key.
  try {
    ViTConfig::from_json(c.config);
  } catch (const Error& e) {
    throw Error(cat_str(source, ": metadata '", kSafetensorsConfigKey, "': ", e.what()));
  }
  const auto step = file.metadata.find(kSafetensorsStepKey);
  if (step != file.metadata.end()) {
    try {
      c.step = std::max<int64_t>(0, std::stoll(step->second));
    } catch (const std::exception&) {
      throw Error(cat_str(source, ": metadata '", kSafetensorsStepKey, "' is not an integer"));
    }
  }
  return c;
}

Checkpoint load_weights(const std::string& path) {
  if (is_safetensors_path(path)) return checkpoint_from_safetensors(load_safetensors(path), path);
  return load_checkpoint(path);
}

}  // namespace vg
