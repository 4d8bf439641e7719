// libFuzzer harness of the config parser: any bytes as a --config file (a ViTConfig, or a
// run's config.json with "model" and "train"). A vg::Error is the expected answer to bad
// input; anything else (a crash, another exception, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "models/training.h"
#include "models/vit_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As `vitgrad train --config` reads it: text that is not JSON is refused before this.
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const bool run = j.is_object() && j.contains("model");
    const vg::ViTConfig config = vg::ViTConfig::from_json(run ? j.at("model") : j);
    config.layerscale_init();
    config.num_patches();
    vg::ViTConfig::from_json(config.to_json());  // what is accepted round-trips
    if (run && j.contains("train")) vg::TrainOptions::from_json(j.at("train"), config);
  } catch (const vg::Error&) {
  }
  return 0;
}
