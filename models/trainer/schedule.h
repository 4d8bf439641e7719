// A run's learning rate by optimiser step: one of the engine's schedules, clocked by steps,
// or the LearnableScaler recipe's, clocked by epochs. A checkpoint's "scheduler" entry is
// its JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <variant>

#include "engine/optim/schedule.h"
#include "models/recipes/learnable_scaler.h"

namespace vg {

class RunSchedule {
 public:
  RunSchedule(optim::Schedule per_step) : schedule_(std::move(per_step)) {}
  RunSchedule(recipes::LearnableScalerSchedule per_epoch) : schedule_(std::move(per_epoch)) {}

  // The schedule `options.sched` names for a run of total_steps steps, steps_per_epoch an
  // epoch: "step" divides the rate by ten at each third of the run, "cosine" decays to
  // min_lr after `warmup` steps, "learnable-scaler" is the recipe's over the run's epochs.
  static RunSchedule for_run(const TrainOptions& options, int64_t total_steps,
                             int64_t steps_per_epoch);

  // The learning rate for optimiser step `step` (0-based).
  double lr_at(int64_t step, int64_t steps_per_epoch) const;
  // The first step from which the rate stays at its floor, or -1 if it never settles
  // (constant and step schedules).
  int64_t floor_step(int64_t steps_per_epoch) const;

  nlohmann::json to_json() const;
  // Dispatches on "kind"; every field is validated, the vg::Error names it.
  static RunSchedule from_json(const nlohmann::json& j);

 private:
  std::variant<optim::Schedule, recipes::LearnableScalerSchedule> schedule_;
};

}  // namespace vg
