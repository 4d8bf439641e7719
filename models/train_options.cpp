// TrainOptions as plain data (config.json, checkpoints) and its validation.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/precision_choice.h"
#include "models/recipes/learnable_scaler.h"
#include "models/training.h"

namespace vg {
namespace {

using nlohmann::json;

template <class T>
void read(const json& j, const char* key, T& into) {
  if (!j.contains(key)) return;
  const json& v = j.at(key);
  bool ok;
  if constexpr (std::is_same_v<T, std::vector<double>>)
    ok = v.is_array() &&
         std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number(); });
  else if constexpr (std::is_same_v<T, bool>)
    ok = v.is_boolean();
  else if constexpr (std::is_integral_v<T>)
    ok = v.is_number_integer();
  else if constexpr (std::is_floating_point_v<T>)
    ok = v.is_number();
  else
    ok = v.is_string();
  check(ok, "training options: '", key, "' has the wrong type (", v.dump(), ")");
  into = v.get<T>();
}

}  // namespace

json TrainOptions::to_json() const {
  return {{"data", data},
          {"data_dir", data_dir},
          {"data_mean", data_mean},
          {"data_std", data_std},
          {"synthetic_train", synthetic_train},
          {"synthetic_test", synthetic_test},
          {"epochs", epochs},
          {"steps", steps},
          {"max_steps", max_steps},
          {"batch", batch},
          {"opt", opt},
          {"lr", lr},
          {"wd", wd},
          {"momentum", momentum},
          {"sched", sched},
          {"warmup", warmup},
          {"min_lr", min_lr},
          {"sched_factor", sched_factor},
          {"sched_threshold", sched_threshold},
          {"clip", clip},
          {"accum", accum},
          {"label_smoothing", label_smoothing},
          {"feature_decay", aux.feature_decay},
          {"feature_threshold", aux.feature_threshold},
          {"attn_extra_loss", aux.attn_extra_loss},
          {"attn_extra_loss_layers", aux.attn_layers},
          {"augment", augment},
          {"crop", crop},
          {"rand_augment", rand_augment},
          {"reprob", reprob},
          {"remode", remode},
          {"mixup", mixup},
          {"cutmix", cutmix},
          {"mixup_prob", mixup_prob},
          {"mixup_switch_prob", mixup_switch_prob},
          {"seed", std::to_string(seed)},
          {"ema", ema},
          {"init", init},
          {"save_every", save_every},
          {"keep", keep},
          {"log_every", log_every},
          {"eval_batch", eval_batch},
          {"amp", amp}};
}

TrainOptions TrainOptions::from_json(const json& j, const ViTConfig& model) {
  check(j.is_object(), "training options: expected a JSON object");
  TrainOptions o;
  const json known = o.to_json();
  for (const auto& [key, value] : j.items())
    check(known.contains(key), "training options: unknown key '", key, "'");
  o.model = model;
  read(j, "data", o.data);
  read(j, "data_dir", o.data_dir);
  read(j, "data_mean", o.data_mean);  // absent in runs saved before the option: the data's own
  read(j, "data_std", o.data_std);
  read(j, "synthetic_train", o.synthetic_train);
  read(j, "synthetic_test", o.synthetic_test);
  read(j, "epochs", o.epochs);
  read(j, "steps", o.steps);
  read(j, "max_steps", o.max_steps);
  read(j, "batch", o.batch);
  read(j, "opt", o.opt);
  read(j, "lr", o.lr);
  read(j, "wd", o.wd);
  read(j, "momentum", o.momentum);
  read(j, "sched", o.sched);
  read(j, "warmup", o.warmup);
  read(j, "min_lr", o.min_lr);
  read(j, "sched_factor", o.sched_factor);
  read(j, "sched_threshold", o.sched_threshold);
  read(j, "clip", o.clip);
  read(j, "accum", o.accum);
  read(j, "label_smoothing", o.label_smoothing);
  read(j, "feature_decay", o.aux.feature_decay);
  read(j, "feature_threshold", o.aux.feature_threshold);
  read(j, "attn_extra_loss", o.aux.attn_extra_loss);
  read(j, "attn_extra_loss_layers", o.aux.attn_layers);
  read(j, "augment", o.augment);
  read(j, "crop", o.crop);  // absent in runs saved before the option: crop on
  read(j, "rand_augment", o.rand_augment);  // the augmentations below: off when absent
  read(j, "reprob", o.reprob);
  read(j, "remode", o.remode);
  read(j, "mixup", o.mixup);
  read(j, "cutmix", o.cutmix);
  read(j, "mixup_prob", o.mixup_prob);
  read(j, "mixup_switch_prob", o.mixup_switch_prob);
  std::string seed = std::to_string(o.seed);
  read(j, "seed", seed);
  try {
    size_t used = 0;
    o.seed = std::stoull(seed, &used);
    check(used == seed.size(), "");
  } catch (const std::exception&) {
    throw Error("training options: 'seed' is not a whole number: " + seed);
  }
  read(j, "ema", o.ema);
  read(j, "init", o.init);
  read(j, "save_every", o.save_every);
  read(j, "keep", o.keep);  // absent in runs saved before the option: last and best
  read(j, "log_every", o.log_every);
  read(j, "eval_batch", o.eval_batch);
  read(j, "amp", o.amp);  // absent in runs saved before the option: fp32
  o.validate();
  return o;
}

data::AugmentPolicy TrainOptions::augment_policy(int64_t num_classes) const {
  data::AugmentPolicy p;
  if (!rand_augment.empty()) p.rand_augment = data::parse_rand_augment(rand_augment);
  p.random_erasing.prob = reprob;
  p.random_erasing.mode = remode;
  p.mixup.mixup_alpha = mixup;
  p.mixup.cutmix_alpha = cutmix;
  p.mixup.prob = mixup_prob;
  p.mixup.switch_prob = mixup_switch_prob;
  p.mixup.label_smoothing = label_smoothing;
  p.mixup.num_classes = num_classes;
  p.random_erasing.validate();
  p.mixup.validate();
  return p;
}

TrainOptions training_defaults(const std::string& preset_name) {
  if (preset_name == recipes::kLearnableScalerPreset) return recipes::learnable_scaler_options();
  return TrainOptions{};
}

namespace {

// "last,best" -> {"last", "best"}
std::vector<std::string> keep_list(const std::string& keep) {
  std::vector<std::string> kinds;
  std::string::size_type start = 0;
  for (;;) {
    const auto comma = keep.find(',', start);
    kinds.push_back(keep.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return kinds;
    start = comma + 1;
  }
}
}  // namespace

void TrainOptions::validate() const {
  model.validate();
  check(data == "fashion-mnist" || data == "synthetic" || data == "idx",
        "--data must be fashion-mnist, synthetic or idx, got '", data, "'");
  check(data != "idx" || !data_dir.empty(), "--data idx needs --data-dir (the IDX files' folder)");
  check(data_mean.size() == data_std.size(), "--data-mean has ", data_mean.size(),
        " values and --data-std ", data_std.size(), ": give one of each per channel");
  if (!data_mean.empty())
    data::Normalisation{data_mean, data_std}.validate(static_cast<int64_t>(data_mean.size()),
                                                      "--data-mean and --data-std");
  check(synthetic_train > 0 && synthetic_test > 0, "synthetic data sizes must be positive");
  check(epochs > 0 || steps > 0, "give --epochs or --steps (a positive number)");
  check(epochs >= 0 && steps >= 0 && max_steps >= 0,
        "--epochs, --steps and --max-steps must not be negative");
  check(batch > 0 && batch <= 65536, "--batch must be between 1 and 65536, got ", batch);
  check(opt == "sgd" || opt == "adamw" || opt == "lamb", "--opt must be sgd, adamw or lamb, got '",
        opt, "'");
  check(std::isfinite(lr) && lr >= 0, "--lr must be a number >= 0, got ", lr);
  check(std::isfinite(wd) && wd >= 0, "--wd must be a number >= 0, got ", wd);
  check(momentum >= 0 && momentum < 1, "--momentum must be in [0, 1), got ", momentum);
  check(sched == "constant" || sched == "step" || sched == "cosine" || sched == "learnable-scaler",
        "--sched must be constant, step, cosine or learnable-scaler, got '", sched, "'");
  check(warmup >= 0, "--warmup must not be negative");
  check(std::isfinite(min_lr) && min_lr >= 0, "--min-lr must be >= 0");
  check(sched_factor > 0 && sched_factor <= 1 && sched_threshold > 0 && sched_threshold < 0.66,
        "the learnable-scaler schedule needs factor in (0, 1] and threshold in (0, 0.66)");
  check(std::isfinite(clip) && clip >= 0, "--clip must be >= 0 (0: no clipping), got ", clip);
  check(accum >= 1 && accum <= 1024, "--accum must be between 1 and 1024, got ", accum);
  check(label_smoothing >= 0 && label_smoothing < 1, "--label-smoothing must be in [0, 1), got ",
        label_smoothing);
  check(std::isfinite(aux.feature_decay) && aux.feature_decay >= 0 &&
            std::isfinite(aux.attn_extra_loss) && aux.attn_extra_loss >= 0,
        "--feature-decay and --attn-extra-loss must be numbers >= 0");
  check(std::isfinite(aux.feature_threshold) && aux.feature_threshold >= 0,
        "--feature-threshold must be a number >= 0, got ", aux.feature_threshold);
  check(aux.attn_layers >= 1, "--attn-extra-loss-layers must be >= 1, got ", aux.attn_layers);
  check(ema == 0 || (ema > 0 && ema < 1), "--ema must be in (0, 1), got ", ema);
  try {
    augment_policy(model.num_classes);  // each augmentation checks its own settings
  } catch (const Error& e) {
    throw Error(cat_str("training options: ", e.what()));
  }
  check(save_every >= 0 && log_every >= 1 && eval_batch >= 1,
        "--save-every must be >= 0 and the logging and evaluation intervals >= 1");
  check_matmul_precision_supported(parse_matmul_precision(amp, "--amp"));
  const std::vector<std::string> kinds = keep_list(keep);
  for (size_t i = 0; i < kinds.size(); ++i) {
    check(kinds[i] == "last" || kinds[i] == "best" || kinds[i] == "steps", "--keep '", keep,
          "': '", kinds[i], "' is not one of last, best, steps");
    for (size_t j = 0; j < i; ++j)
      check(kinds[j] != kinds[i], "--keep '", keep, "' names '", kinds[i], "' twice");
  }
}

bool TrainOptions::keeps(const std::string& kind) const {
  for (const std::string& k : keep_list(keep))
    if (k == kind) return true;
  return false;
}

}  // namespace vg
