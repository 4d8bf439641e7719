// The LearnableScaler training recipe, in one place: its preset's training options, its
// per-epoch learning-rate schedule (the reference's `--sched custom`) and its auxiliary losses
// added to the cross-entropy. The layer itself is layers/learnable_scaler.h; the losses' terms
// per block are ops (engine/ops/aux_loss.cpp) that the ViT adds up (ViT::forward with an
// AuxLossConfig).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "models/trainer/loss.h"
#include "models/training.h"

namespace vg::recipes {

// The preset that brings the recipe's training options along (`--preset fmnist-ls-recipe`).
inline constexpr const char* kLearnableScalerPreset = "fmnist-ls-recipe";

// The recipe at toy scale: LAMB wd 0.02 with its global clip, accumulation, the
// learnable-scaler schedule, label smoothing and both auxiliary losses.
TrainOptions learnable_scaler_options();

// The recipe's `--sched custom`, stepped once per epoch e of num_epochs N: with
// c(e) = (1 + cos(pi e / N)) / 2, n = threshold * N and f = floor(0.66 N):
//   e < n: factor * c(e);  n <= e < f: linear from factor * c(n) to c(f);  e >= f: c(e).
// For e >= N it stays at c(N) = 0 (the recipe never goes past N; the cosine would rise).
class LearnableScalerSchedule {
 public:
  LearnableScalerSchedule(double base_lr, int64_t num_epochs, double factor = 0.8,
                          double threshold = 0.5);

  // The learning rate at epoch e >= 0, and the same relative to base_lr.
  double lr(int64_t epoch) const;
  double multiplier(int64_t epoch) const;
  int64_t num_epochs() const { return num_epochs_; }

  // {"kind": "learnable_scaler", "base_lr", "num_epochs", "factor", "threshold"}, as a
  // checkpoint's "scheduler" entry holds it.
  nlohmann::json to_json() const;
  // Validates every field (present, typed, in range) and no extra keys.
  static LearnableScalerSchedule from_json(const nlohmann::json& j);

 private:
  void validate() const;

  double base_lr_;
  int64_t num_epochs_;
  double factor_, threshold_;
};

inline constexpr const char* kLearnableScalerScheduleKind = "learnable_scaler";

// Cross-entropy (with label smoothing) plus the auxiliary losses `aux` turns on.
LossFn loss_with_aux_losses(double label_smoothing, const AuxLossConfig& aux);

}  // namespace vg::recipes
