#include "tools/train_flags.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <thread>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/precision_choice.h"
#include "models/run_data.h"
#include "tools/config_file.h"

namespace vg::tools {

std::vector<Flag> recipe_flags() {
  return {
      {"--data", "NAME", "fashion-mnist (default) | synthetic | idx (the IDX files of --data-dir)"},
      {"--data-dir", "DIR",
       "folder of the four IDX files (any image size and channels, gzipped or not); alone: "
       "--data idx"},
      {"--data-mean", "LIST", "pixel mean per channel, e.g. 0.5,0.5,0.5 (default: the data's)"},
      {"--data-std", "LIST", "pixel std per channel (default: the data's)"},
      {"--synthetic-size", "N", "training images of --data synthetic (test: a quarter)"},
      {"--epochs", "N", "passes over the training set (default 10)"},
      {"--steps", "N", "optimiser steps in total (instead of --epochs)"},
      {"--max-steps", "N", "stop after N steps; the schedule still spans the whole run"},
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
      {"--aa", "POLICY", "RandAugment as timm writes it, e.g. rand-m7-mstd0.5 (grey-image ops)"},
      {"--reprob", "P", "random erasing probability (default 0)"},
      {"--remode", "MODE", "random erasing fill: pixel (default) | rand | const"},
      {"--mixup", "A", "mixup with lambda ~ Beta(A, A) (default 0: off)"},
      {"--cutmix", "A", "cutmix with lambda ~ Beta(A, A) (default 0: off)"},
      {"--mixup-prob", "P", "the chance that a batch is mixed (default 1)"},
      {"--mixup-switch-prob", "P", "cutmix's share when both are on (default 0.5)"},
      {"--warmup-epochs", "N", "linear warmup in epochs, turned into --warmup steps"},
      {"--train-feature-decay", "T",
       "the reference's: --feature-decay T*T, and --attn-extra-loss S weighs S*T"},
      {"--no-augment", "", "no random crop and flip"},
      {"--no-crop", "", "augment with the horizontal flip only"},
      {"--seed", "N", "seed of initialisation, shuffling, augmentation and dropout"},
      {"--amp", "MODE",
       "fp32 (default) | bf16: matrix products on bf16 operands, float sums | auto: bf16 "
       "where the CPU's bf16 units outrun its fmas, else fp32; alone, as timm's switch: bf16"},
      {"--amp-dtype", "NAME", "timm's mixed-precision type: bfloat16 (the only one here)"},
      {"--workers", "N", "timm's loader processes: accepted, means nothing here"},
      {"--torchcompile", "MODE", "timm's torch.compile backend: accepted, means nothing here"},
  };
}

void recipe_aliases(ArgParser& args) {
  args.alias("--batch-size", "--batch");  // timm's train.py names
  args.alias("--weight-decay", "--wd");
  args.alias("--clip-grad", "--clip");
  args.alias("--grad-accum-steps", "--accum");
  args.alias("--smoothing", "--label-smoothing");
  args.alias("--warmup-epoch", "--warmup-epochs");  // argparse's abbreviation, as the reference
  args.alias("--epoch-factor", "--sched-factor");   // the reference's --sched custom
  args.alias("--epoch-threshold", "--sched-threshold");
  args.implicit_value("--amp", "bf16");  // timm's --amp is a switch
}

namespace {

constexpr double kTimmSmoothing = 0.1;

// Optimiser steps in one epoch of the options' training set (as models/trainer/run.cpp counts).
int64_t steps_per_epoch(const TrainOptions& o) {
  const int64_t images = training_data_shape(o).size;
  const int64_t batches = (images + o.batch - 1) / o.batch;
  return std::max<int64_t>(1, (batches + o.accum - 1) / o.accum);
}

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

namespace {

// Which data, and how it is normalised.
void data_from_flags(const ArgParser& args, TrainOptions& o) {
  o.data = args.choice("--data", args.has("--data-dir") ? "idx" : o.data,
                       {"fashion-mnist", "synthetic", "idx"});
  o.data_dir = args.text("--data-dir", o.data_dir);
  if (o.data == "idx" && o.data_dir.empty()) args.fail("--data idx needs --data-dir");
  if (args.has("--data-mean") != args.has("--data-std"))
    args.fail("give --data-mean and --data-std together");
  if (args.has("--data-mean")) {
    o.data_mean = args.numbers("--data-mean", -1e6, 1e6);
    o.data_std = args.numbers("--data-std", 1e-12, 1e6);
    if (o.data_mean.size() != o.data_std.size())
      args.fail("--data-mean has " + std::to_string(o.data_mean.size()) + " values and " +
                "--data-std " + std::to_string(o.data_std.size()) +
                ": give one of each per channel");
  }
  if (args.has("--synthetic-size")) {
    o.synthetic_train = args.integer("--synthetic-size", 0, 10, 1000000);
    o.synthetic_test = std::max<int64_t>(10, o.synthetic_train / 4);
  }
}

// How long, with which optimiser and schedule.
void length_and_optimiser_from_flags(const ArgParser& args, TrainOptions& o) {
  o.epochs = args.integer("--epochs", args.has("--steps") ? 0 : o.epochs, 1, 1000000);
  o.steps = args.integer("--steps", args.has("--epochs") ? 0 : o.steps, 1, INT64_MAX / 2);
  o.max_steps = args.integer("--max-steps", o.max_steps, 1, INT64_MAX / 2);
  o.batch = args.integer("--batch", o.batch, 1, 65536);
  o.opt = args.choice("--opt", o.opt, {"sgd", "adamw", "lamb"});
  o.lr = args.number("--lr", o.lr, 0, 100);
  o.min_lr = args.number("--min-lr", o.min_lr, 0, 100);
  o.wd = args.number("--wd", o.wd, 0, 100);
  o.momentum = args.number("--momentum", o.momentum, 0, 0.9999);
  o.sched =
      args.choice("--sched", o.sched, {"constant", "step", "cosine", "learnable-scaler", "custom"});
  if (o.sched == "custom") o.sched = "learnable-scaler";  // the reference's name for it
  o.sched_factor = args.number("--sched-factor", o.sched_factor, 1e-6, 1);
  o.sched_threshold = args.number("--sched-threshold", o.sched_threshold, 1e-6, 0.659);
  o.warmup = args.integer("--warmup", o.warmup, 0, INT64_MAX / 2);
  o.clip = args.number("--clip", o.clip, 0, 1e12);
  o.accum = args.integer("--accum", o.accum, 1, 1024);
  o.label_smoothing = args.number("--label-smoothing", o.label_smoothing, 0, 0.999);
}

// The auxiliary losses, in the reference's two spellings; then --warmup-epochs, which needs
// the data and batch size that make an epoch.
void aux_and_warmup_from_flags(const ArgParser& args, TrainOptions& o) {
  o.aux.feature_decay = args.number("--feature-decay", o.aux.feature_decay, 0, 1e6);
  o.aux.feature_threshold = args.number("--feature-threshold", o.aux.feature_threshold, 0, 1e12);
  o.aux.attn_extra_loss = args.number("--attn-extra-loss", o.aux.attn_extra_loss, 0, 1e6);
  o.aux.attn_layers = args.integer("--attn-extra-loss-layers", o.aux.attn_layers, 1, 1024);
  if (args.has("--train-feature-decay")) {
    // The reference multiplies the summed auxiliary losses by --train-feature-decay once
    // more (models/training.h, training_defaults), so its weights are T*T and S*T.
    if (args.has("--feature-decay"))
      args.fail("give --feature-decay or --train-feature-decay, not both");
    const double t = args.number("--train-feature-decay", 0, 0, 1e3);
    o.aux.feature_decay = t * t;
    o.aux.attn_extra_loss = args.number("--attn-extra-loss", 0, 0, 1e6) * t;
  }
  if (args.has("--warmup-epochs")) {
    if (args.has("--warmup")) args.fail("give --warmup or --warmup-epochs, not both");
    o.warmup = args.integer("--warmup-epochs", 0, 0, 1000000) * steps_per_epoch(o);
  }
}

// RandAugment, random erasing, mixup and cutmix.
void augmentation_from_flags(const ArgParser& args, TrainOptions& o) {
  o.rand_augment = args.text("--aa", o.rand_augment);
  if (o.rand_augment == "none") o.rand_augment.clear();
  o.reprob = args.number("--reprob", o.reprob, 0, 1);
  o.remode = args.choice("--remode", o.remode, {"pixel", "rand", "const"});
  o.mixup = args.number("--mixup", o.mixup, 0, 1e3);
  o.cutmix = args.number("--cutmix", o.cutmix, 0, 1e3);
  o.mixup_prob = args.number("--mixup-prob", o.mixup_prob, 0, 1);
  o.mixup_switch_prob = args.number("--mixup-switch-prob", o.mixup_switch_prob, 0, 1);
  // timm's --smoothing defaults to 0.1 and goes into the mixed targets.
  if ((o.mixup > 0 || o.cutmix > 0) && !args.has("--label-smoothing") && o.label_smoothing == 0)
    o.label_smoothing = kTimmSmoothing;
}

// The reference's flags that mean nothing here, the switches, the seed and the precision.
void run_settings_from_flags(const ArgParser& args, TrainOptions& o) {
  if (args.has("--amp-dtype") && args.text("--amp-dtype") != "bfloat16")
    args.fail("--amp-dtype " + args.text("--amp-dtype") +
              ": only bfloat16 products are available (--amp bf16)");
  for (const char* ignored : {"--workers", "--torchcompile"})
    if (args.has(ignored))
      args.warn(std::string(ignored) + " means nothing here (one process, no compiler); ignored");
  if (args.on("--no-augment")) o.augment = false;
  if (args.on("--no-crop")) o.crop = false;
  o.seed = static_cast<uint64_t>(args.integer("--seed", int64_t(o.seed), 0, INT64_MAX));
  o.amp = args.choice("--amp", o.amp, {"fp32", "bf16", "auto"});
  // "auto", from the flag or a config file's train section (o's default), becomes what it
  // picks here, so the run's config records what ran
  if (o.amp == "auto") o.amp = matmul_precision_name(best_matmul_precision());
}

}  // namespace

// In one fixed order: of several bad flags, the first of them in this order is the one named.
void recipe_from_flags(const ArgParser& args, TrainOptions& o) {
  if (args.has("--epochs") && args.has("--steps")) args.fail("give --epochs or --steps, not both");
  data_from_flags(args, o);
  length_and_optimiser_from_flags(args, o);
  aux_and_warmup_from_flags(args, o);
  augmentation_from_flags(args, o);
  run_settings_from_flags(args, o);
}

}  // namespace vg::tools
