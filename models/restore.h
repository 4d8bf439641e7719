// Restoring a checkpoint into live objects: the one place where a checkpoint's entries meet
// a model, an optimiser, a schedule, generators and a data loader.
//
// Everything is validated before anything changes: the config against the model, every
// weight's name, shape and dtype, the optimiser state, the schedule, every generator state
// and the loader position. On any error the targets are exactly as they were and the
// vg::Error names the file and the entry ("runs/a/last.json: model entry
// 'blocks.0.ls1.gamma' has shape [5], the model's is [64]").
#pragma once

#include <optional>
#include <string>

#include "engine/data/loader.h"
#include "engine/io/checkpoint.h"
#include "engine/optim/optimizer.h"
#include "models/trainer/schedule.h"
#include "models/ema.h"
#include "models/vit.h"

namespace vg {

// What to restore. The model is required; every other target is optional, and a target
// that is given makes its section required (a weights-only checkpoint restores a model).
struct RestoreTargets {
  ViT* model = nullptr;                                // "config" and "model"
  optim::Optimizer* optimizer = nullptr;               // "optimizer"
  std::optional<RunSchedule>* schedule = nullptr;      // "scheduler"
  data::Loader* loader = nullptr;                      // "data" and rng "augment"
  bool dropout_rng = false;                            // rng "dropout" into model->dropout_rng()
  ModelEma* ema = nullptr;                             // extra "ema"
};

// The checkpoint's model config, validated; an error names `source`.
ViTConfig checkpoint_config(const Checkpoint& checkpoint, const std::string& source);

// The pixel normalisation the run's data had, from the "data" entries "mean" and "std"
// (validated); none in checkpoints written before they were recorded, whose data had
// Fashion-MNIST's. An error names `source`.
std::optional<data::Normalisation> checkpoint_normalisation(const Checkpoint& checkpoint,
                                                            const std::string& source);

// Validates `checkpoint` (read from `source`, which names it in messages) against the
// targets, then restores them. All or nothing.
void restore_checkpoint(const Checkpoint& checkpoint, const std::string& source,
                        const RestoreTargets& into);

// load_checkpoint(path) followed by restore_checkpoint.
Checkpoint restore_checkpoint(const std::string& path, const RestoreTargets& into);

// The weights-only form of a checkpoint: config, model and the data's normalisation (step
// kept for reference), no optimiser, schedule, generators or loader position. With `use_ema` the
// EMA weights the run kept become the model's.
Checkpoint weights_only(const Checkpoint& checkpoint, const std::string& source, bool use_ema);

}  // namespace vg
