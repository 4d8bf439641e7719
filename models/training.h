// Training and evaluation of a ViT: what `vitgrad train` and `vitgrad eval` call. The run is
// built by models/trainer/run.h and stepped by the Trainer (models/trainer/trainer.h).
//
// A run writes into its folder: config.json (model and training options), metrics.jsonl
// (one JSON object per logged step and per epoch), last.json (every --save-every steps and
// at the end) and best.json (whenever the test accuracy improves); --keep chooses among
// these and step-<N>.json files (docs/checkpoints.md). A checkpoint holds the
// whole state (weights, optimiser, schedule, generators, loader position, step), so a run
// resumed from it continues with exactly the bits it would have had without stopping.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/data/loader.h"
#include "engine/data/synthetic.h"
#include "models/vit.h"
#include "models/vit_config.h"

namespace vg {

struct TrainOptions {
  ViTConfig model;
  std::string data = "fashion-mnist";  // "fashion-mnist" | "synthetic" | "idx" (models/run_data.h)
  std::string data_dir;  // the IDX files; empty: the dataset-fashion-mnist package's folder
  // The pixels' normalisation, one value per channel (both lists or neither); empty: the
  // data's own (Fashion-MNIST's statistics, or those of the IDX training split).
  std::vector<double> data_mean, data_std;
  int64_t synthetic_train = data::kSyntheticTrainSize;
  int64_t synthetic_test = data::kSyntheticTestSize;
  int64_t epochs = 10;
  int64_t steps = 0;  // > 0: optimiser steps in total, instead of epochs
  int64_t max_steps = 0;  // > 0: stop after this many steps; the schedule spans the whole run
  int64_t batch = 128;
  std::string opt = "adamw";  // "sgd" | "adamw" | "lamb"
  double lr = 1e-3;
  double wd = 0.05;
  double momentum = 0.9;         // SGD
  std::string sched = "cosine";  // "constant" | "step" | "cosine" | "learnable-scaler"
  int64_t warmup = 0;            // warmup steps (cosine)
  double min_lr = 1e-6;          // the floor of the cosine
  double sched_factor = 0.8;     // learnable-scaler schedule
  double sched_threshold = 0.5;
  double clip = 0;    // global grad-norm clip; 0: none
  int64_t accum = 1;  // micro-batches per optimiser step
  double label_smoothing = 0;
  AuxLossConfig aux;  // the LearnableScaler recipe's auxiliary losses
  bool augment = true;
  bool crop = true;  // with augment: random crop as well as flip
  // timm's augmentations (engine/data AugmentPolicy), all off by default:
  std::string rand_augment;       // a RandAugment policy such as "rand-m7-mstd0.5"; "": none
  double reprob = 0;              // random erasing probability
  std::string remode = "pixel";   // its fill: pixel | rand | const
  double mixup = 0, cutmix = 0;   // Beta alphas; with either, soft targets and label_smoothing
  double mixup_prob = 1;          // the chance that a batch is mixed
  double mixup_switch_prob = 0.5;  // cutmix's share when both are on
  uint64_t seed = 0;
  double ema = 0;          // > 0: keep a model EMA with this decay
  std::string init;        // start from a checkpoint's config and weights
  std::string out;         // the run folder
  int64_t save_every = 0;  // steps between last.json saves; 0: only at the end
  // The checkpoints a run keeps, a comma-separated list of: "last" (last.json, rewritten at
  // every save), "best" (best.json, whenever the test accuracy improves), "steps" (also
  // step-<N>.json at every save, each kept).
  std::string keep = "last,best";
  int64_t log_every = 50;  // steps between metrics records
  int64_t eval_batch = 500;
  bool progress_tty = false;  // one updating progress line instead of plain lines
  std::string amp = "fp32";   // "bf16": matrix products on bf16 operands (matmul_precision.h)

  nlohmann::json to_json() const;  // everything but `model`, for config.json and checkpoints
  // Reads to_json()'s output over the defaults; unknown keys and bad values are errors.
  static TrainOptions from_json(const nlohmann::json& j, const ViTConfig& model);
  void validate() const;
  bool keeps(const std::string& kind) const;  // whether `keep` lists kind
  // The loader's augmentation policy these options describe, with targets `num_classes` wide.
  data::AugmentPolicy augment_policy(int64_t num_classes) const;
};

// The training options a named model preset implies: the defaults above, except for
// "fmnist-ls-recipe", the LearnableScaler training recipe (models/recipes/learnable_scaler.h).
TrainOptions training_defaults(const std::string& preset_name);

struct TrainResult {
  int64_t steps = 0;
  bool evaluated = false;  // test_loss and test_accuracy hold the latest evaluation
  double test_loss = 0, test_accuracy = 0, best_test_accuracy = 0;
  double ema_test_accuracy = -1;  // the EMA weights' last test accuracy; -1: no EMA
  double seconds = 0;
  std::string out_dir;
  int signal = 0;  // SIGINT or SIGTERM when one stopped the run early (last.json saved)
};

// Trains from scratch (or from options.init). Progress goes to `log`.
TrainResult train(const TrainOptions& options, std::ostream& log);
// Continues the run saved in `checkpoint` until `total_steps` optimiser steps (or, if 0, the
// total the run was started with); `out` and `save_every` (< 0: as before) may change. The
// run goes on in the checkpoint's folder (or `out`) when the checkpoint is the folder's
// latest; from an earlier one (best.json behind last.json) it continues in a new folder,
// `out` or "<folder>-from-step<N>", which starts with the history up to that step, and the
// later checkpoints and metrics stay as they are.
TrainResult resume(const std::string& checkpoint, int64_t total_steps, const std::string& out,
                   int64_t save_every, std::ostream& log, bool progress_tty);

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t count = 0;
};
// Cross-entropy and accuracy over a whole data set, in eval mode and without gradients.
// With `predictions`, also the predicted class of every image, in data set order. With
// `tta_flip`, each image's logits are the mean of its own and its mirror image's.
EvalResult evaluate(ViT& model, const data::Dataset& data, int64_t batch_size = 500,
                    std::vector<int32_t>* predictions = nullptr, bool tta_flip = false);

}  // namespace vg
