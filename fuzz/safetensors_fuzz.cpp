// libFuzzer harness of the safetensors reader: any bytes through parse_safetensors, and what
// parses through the config in its metadata and, for a small model, the check and restore
// of every tensor into a live ViT (what `vitgrad import` and `train --init` do). A vg::Error
// is the expected answer to bad input; anything else (a crash, another exception, a
// sanitizer report, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/io/safetensors.h"
#include "models/restore.h"
#include "models/weights_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const vg::SafeTensors file = vg::parse_safetensors(bytes, "fuzz.safetensors");
    const vg::Checkpoint c = vg::checkpoint_from_safetensors(file, "fuzz.safetensors");
    const vg::ViTConfig config = vg::checkpoint_config(c, "fuzz.safetensors");
    // Small enough to build in a millisecond or two.
    if (config.img_size > 32 || config.embed_dim > 32 || config.depth > 3 ||
        config.num_classes > 16 || config.in_chans > 3 || config.mlp_ratio > 4 ||
        config.patch_size < 4)
      return 0;
    vg::ViT model(config);
    vg::restore_checkpoint(c, "fuzz.safetensors", {.model = &model});
    if (!config.layerscale.enabled()) model.add_layerscale(1.0);
  } catch (const vg::Error&) {
  }
  return 0;
}
