// libFuzzer harness of the checkpoint loader: any bytes through parse_checkpoint, and what
// parses through the config, the training options and, for a small model, the restore of
// every section into live objects. A vg::Error is the expected answer to bad input;
// anything else (a crash, another exception, a sanitizer report, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/data/loader.h"
#include "engine/data/synthetic.h"
#include "engine/io/checkpoint.h"
#include "engine/optim/adamw.h"
#include "engine/optim/param_groups.h"
#include "models/restore.h"
#include "models/training.h"

namespace {

// Small enough to build in a millisecond or two: the fuzzer must not spend its time (or
// its memory) on a config that asks for a big model.
bool small(const vg::ViTConfig& c) {
  return c.img_size <= 32 && c.embed_dim <= 32 && c.depth <= 3 && c.num_classes <= 16 &&
         c.in_chans <= 3 && c.mlp_ratio <= 4 && c.patch_size >= 4;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const vg::Checkpoint c = vg::parse_checkpoint(text, "fuzz.json");
    const vg::ViTConfig config = vg::checkpoint_config(c, "fuzz.json");
    if (c.extra.contains("train")) vg::TrainOptions::from_json(c.extra.at("train"), config);
    if (!small(config)) return 0;
    vg::ViT model(config);
    vg::optim::AdamW optimizer(
        vg::optim::param_groups_weight_decay(model.named_parameters(), 0.05));
    std::optional<vg::RunSchedule> schedule;
    const vg::data::TensorDataset images =
        vg::data::make_synthetic("train", 40, 0);  // 28x28x1, as the seed checkpoints
    vg::data::Loader loader(images, 20, true, true, 1);
    const bool whole_run = c.optimizer.is_object();
    vg::restore_checkpoint(c, "fuzz.json",
                           {.model = &model,
                            .optimizer = whole_run ? &optimizer : nullptr,
                            .schedule = whole_run ? &schedule : nullptr,
                            .loader = whole_run && config.img_size == 28 ? &loader : nullptr,
                            .dropout_rng = whole_run});
  } catch (const vg::Error&) {
  }
  return 0;
}
