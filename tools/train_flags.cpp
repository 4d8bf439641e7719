#include "tools/train_flags.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <thread>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "tools/config_file.h"

namespace vg::tools {

std::vector<Flag> recipe_flags() {
  return {
      {"--data", "NAME", "fashion-mnist (default) | synthetic"},
      {"--data-dir", "DIR", "folder with the four Fashion-MNIST IDX files (gzipped or not)"},
      {"--synthetic-size", "N", "training images of --data synthetic (test: a quarter)"},
      {"--epochs", "N", "passes over the training set (default 10)"},
      {"--steps", "N", "optimiser steps in total (instead of --epochs)"},
      {"--batch", "N", "images per micro-batch (default 128)"},
      {"--opt", "NAME", "sgd | adamw (default) | lamb"},
      {"--lr", "X", "peak learning rate (default 1e-3)"},
      {"--min-lr", "X", "the floor of the cosine schedule (default 1e-6)"},
      {"--wd", "X", "weight decay of the decayed group (default 0.05)"},
      {"--momentum", "X", "SGD momentum (default 0.9)"},
      {"--sched", "NAME", "constant | step | cosine (default) | learnable-scaler"},
      {"--sched-factor", "X", "learnable-scaler schedule: lr factor of the first part (0.8)"},
      {"--sched-threshold", "X", "learnable-scaler schedule: where the first part ends (0.5)"},
      {"--warmup", "N", "linear warmup steps (cosine)"},
      {"--clip", "X", "global gradient-norm clip (default 0: none)"},
      {"--accum", "N", "micro-batches per optimiser step (default 1)"},
      {"--label-smoothing", "X", "label smoothing of the cross-entropy (default 0)"},
      {"--feature-decay", "W", "weight of the hinge on |residual| above a threshold (0: off)"},
      {"--feature-threshold", "X", "the threshold of --feature-decay (default 200)"},
      {"--attn-extra-loss", "W", "weight of the attention-peakedness loss (0: off)"},
      {"--attn-extra-loss-layers", "K", "the first K blocks get it (default 6)"},
      {"--no-augment", "", "no random crop and flip"},
      {"--no-crop", "", "augment with the horizontal flip only"},
      {"--seed", "N", "seed of initialisation, shuffling, augmentation and dropout"},
      {"--amp", "MODE", "fp32 (default) | bf16: matrix products on bf16 operands, float sums"},
  };
}

namespace {

// The cores this process may run on (its affinity mask: a job scheduler's share, not the
// machine's count).
int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

void threads_from_flags(const ArgParser& args) {
  if (!args.has("--threads")) return;
  const int threads = static_cast<int>(args.integer("--threads", 0, 1, 256));
  const int cores = usable_cores();
  if (threads > cores)
    args.warn("--threads " + std::to_string(threads) + " is more than the " +
              std::to_string(cores) + " cores this process can use; the threads will take turns");
  set_num_threads(threads);
}

TrainOptions recipe_defaults(const ArgParser& args) {
  if (!args.has("--config")) return training_defaults(args.text("--preset"));
  try {
    const ConfigFile file = read_config_file(args.text("--config"));
    if (!file.train) return TrainOptions{};  // a plain ViTConfig: the default recipe
    try {
      // The model is checked where it is read (model_from_flags); here only the recipe.
      return TrainOptions::from_json(*file.train, ViTConfig{});
    } catch (const Error& e) {
      throw Error(file.path + ": section 'train': " + e.what());
    }
  } catch (const Error& e) {
    args.fail(e.what());
  }
}

void recipe_from_flags(const ArgParser& args, TrainOptions& o) {
  if (args.has("--epochs") && args.has("--steps")) args.fail("give --epochs or --steps, not both");
  o.data = args.choice("--data", o.data, {"fashion-mnist", "synthetic"});
  o.data_dir = args.text("--data-dir", o.data_dir);
  if (args.has("--synthetic-size")) {
    o.synthetic_train = args.integer("--synthetic-size", 0, 10, 1000000);
    o.synthetic_test = std::max<int64_t>(10, o.synthetic_train / 4);
  }
  o.epochs = args.integer("--epochs", args.has("--steps") ? 0 : o.epochs, 1, 1000000);
  o.steps = args.integer("--steps", args.has("--epochs") ? 0 : o.steps, 1, INT64_MAX / 2);
  o.batch = args.integer("--batch", o.batch, 1, 65536);
  o.opt = args.choice("--opt", o.opt, {"sgd", "adamw", "lamb"});
  o.lr = args.number("--lr", o.lr, 0, 100);
  o.min_lr = args.number("--min-lr", o.min_lr, 0, 100);
  o.wd = args.number("--wd", o.wd, 0, 100);
  o.momentum = args.number("--momentum", o.momentum, 0, 0.9999);
  o.sched = args.choice("--sched", o.sched, {"constant", "step", "cosine", "learnable-scaler"});
  o.sched_factor = args.number("--sched-factor", o.sched_factor, 1e-6, 1);
  o.sched_threshold = args.number("--sched-threshold", o.sched_threshold, 1e-6, 0.659);
  o.warmup = args.integer("--warmup", o.warmup, 0, INT64_MAX / 2);
  o.clip = args.number("--clip", o.clip, 0, 1e12);
  o.accum = args.integer("--accum", o.accum, 1, 1024);
  o.label_smoothing = args.number("--label-smoothing", o.label_smoothing, 0, 0.999);
  o.aux.feature_decay = args.number("--feature-decay", o.aux.feature_decay, 0, 1e6);
  o.aux.feature_threshold = args.number("--feature-threshold", o.aux.feature_threshold, 0, 1e12);
  o.aux.attn_extra_loss = args.number("--attn-extra-loss", o.aux.attn_extra_loss, 0, 1e6);
  o.aux.attn_layers = args.integer("--attn-extra-loss-layers", o.aux.attn_layers, 1, 1024);
  if (args.on("--no-augment")) o.augment = false;
  if (args.on("--no-crop")) o.crop = false;
  o.seed = static_cast<uint64_t>(args.integer("--seed", int64_t(o.seed), 0, INT64_MAX));
  o.amp = args.choice("--amp", o.amp, {"fp32", "bf16"});
}

}  // namespace vg::tools
