#include "models/recipes/learnable_scaler.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "engine/ops/ops.h"

namespace vg::recipes {
namespace {

using nlohmann::json;

// The hinge's threshold in the toy recipe. The reference's 200 fits ImageNet-scale
// residual streams; see learnable_scaler_options.
constexpr double kRecipeFeatureThreshold = 200;

bool finite_at_least(double x, double lo) {
  return std::isfinite(x) && x >= lo;
}

double read_double(const json& j, const char* field) {
  check(j.contains(field), "schedule: missing field '", field, "'");
  check(j[field].is_number(), "schedule: field '", field, "' must be a number, got ",
        j[field].dump());
  return j[field].get<double>();
}

}  // namespace

TrainOptions learnable_scaler_options() {
  TrainOptions o;
  o.model = preset(kLearnableScalerPreset);
  // The reference command (lr 0.005, wd 0.02, LAMB, --clip-grad 14 before LAMB's own
  // clip at 1.0, 8 accumulated micro-batches, --sched custom 0.8/0.5, smoothing 0.1) with
  // the batch scaled down to 128 x 4 for a CPU. Its auxiliary weights are the effective
  // ones of the reference: train.py multiplies the summed extra loss by
  // --train-feature-decay once more, so 0.1 becomes 0.1 x 0.1 and 0.03 becomes 0.03 x 0.1.
  o.opt = "lamb";
  o.lr = 5e-3;
  o.wd = 0.02;
  o.clip = 14;
  o.batch = 128;
  o.accum = 4;
  o.sched = "learnable-scaler";
  o.sched_factor = 0.8;
  o.sched_threshold = 0.5;
  o.label_smoothing = 0.1;
  o.aux.feature_decay = 0.1 * 0.1;
  o.aux.attn_extra_loss = 0.03 * 0.1;
  o.aux.attn_layers = 6;
  o.aux.feature_threshold = kRecipeFeatureThreshold;
  return o;
}

LearnableScalerSchedule::LearnableScalerSchedule(double base_lr, int64_t num_epochs, double factor,
                                                 double threshold)
    : base_lr_(base_lr), num_epochs_(num_epochs), factor_(factor), threshold_(threshold) {
  validate();
}

void LearnableScalerSchedule::validate() const {
  // base_lr 0 is allowed: a run that keeps the weights as initialised.
  check(finite_at_least(base_lr_, 0),
        "schedule (learnable_scaler): base_lr must be a finite number >= 0, got ", base_lr_);
  check(num_epochs_ >= 1, "schedule (learnable_scaler): num_epochs must be >= 1, got ",
        num_epochs_);
  check(finite_at_least(factor_, 0) && factor_ > 0,
        "schedule (learnable_scaler): factor must be a finite number > 0, got ", factor_);
  check(finite_at_least(threshold_, 0) && threshold_ <= 1,
        "schedule (learnable_scaler): threshold must be in [0, 1], got ", threshold_);
}

double LearnableScalerSchedule::lr(int64_t epoch) const {
  return base_lr_ * multiplier(epoch);
}

double LearnableScalerSchedule::multiplier(int64_t t) const {
  check(t >= 0, "schedule (learnable_scaler): t must be >= 0, got ", t);
  const double N = static_cast<double>(num_epochs_);
  const auto c = [N](double e) { return (1 + std::cos(M_PI * e / N)) / 2; };
  const double e = static_cast<double>(std::min(t, num_epochs_));
  const double n = threshold_ * N;
  const double f = std::floor(0.66 * N);  // the recipe's int(0.66 * N)
  if (e < n) return factor_ * c(e);
  if (e < f) {  // implies n < f, so the slope is defined
    const double a = (factor_ * c(n) - c(f)) / (n - f);
    const double b = factor_ * c(n) - a * n;
    return a * e + b;
  }
  return c(e);
}

json LearnableScalerSchedule::to_json() const {
  return {{"kind", kLearnableScalerScheduleKind},
          {"base_lr", base_lr_},
          {"num_epochs", num_epochs_},
          {"factor", factor_},
          {"threshold", threshold_}};
}

LearnableScalerSchedule LearnableScalerSchedule::from_json(const json& j) {
  check(j.is_object(), "schedule: expected an object, got ", j.type_name());
  check(j.contains("kind") && j["kind"] == kLearnableScalerScheduleKind,
        "schedule: 'kind' must be learnable_scaler");
  const std::vector<std::string> fields = {"kind", "base_lr", "num_epochs", "factor", "threshold"};
  for (const auto& [key, value] : j.items())
    check(std::find(fields.begin(), fields.end(), key) != fields.end(),
          "schedule (learnable_scaler): unknown field '", key, "'");
  check(j.contains("num_epochs") && j["num_epochs"].is_number_integer(),
        "schedule: field 'num_epochs' must be an integer, got ",
        j.contains("num_epochs") ? j["num_epochs"].dump() : "nothing");
  return LearnableScalerSchedule(read_double(j, "base_lr"), j["num_epochs"].get<int64_t>(),
                                 read_double(j, "factor"), read_double(j, "threshold"));
}

LossFn loss_with_aux_losses(double label_smoothing, const AuxLossConfig& aux) {
  return [label_smoothing, aux](ViT& model, const data::Batch& batch) {
    MicroBatchLoss out;
    Tensor extra;
    out.logits = model.forward(batch.images, aux, &extra);
    out.total = batch_cross_entropy(out.logits, batch, label_smoothing);
    out.value = out.total.item();
    out.aux = extra.item();
    out.total = add(out.total, extra);
    return out;
  };
}

}  // namespace vg::recipes
