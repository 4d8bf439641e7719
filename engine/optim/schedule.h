// Learning-rate schedules: pure functions of the step (or epoch) counter t, stateless beyond
// their configuration, so resuming a run needs only t and the JSON config. A recipe's own
// schedule lives with its recipe (models/recipes/).
//
// The caller decides what t counts (epochs, or updates as timm does with --sched-on-updates)
// and calls optimizer.set_lr(schedule.lr(t)), which applies each group's lr_scale.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace vg::optim {

class Schedule {
 public:
  enum class Kind { constant, step, cosine };

  // lr = base_lr for every t.
  static Schedule constant(double base_lr);
  // torch StepLR: lr = base_lr * gamma^floor(t / step_size).
  static Schedule step(double base_lr, int64_t step_size, double gamma = 0.1);
  // timm CosineLRScheduler (one cycle, k_decay 1):
  //   t < warmup_t:  warmup_lr_init + t * (base_lr - warmup_lr_init) / warmup_t
  //   otherwise:     min_lr + 0.5 (base_lr - min_lr)(1 + cos(pi * t / t_initial)), min_lr
  //                  from t_initial on.
  // As in timm, the cosine reads the ABSOLUTE t unless warmup_prefix, so with warmup the
  // lr at t = warmup_t is already a little below base_lr; warmup_prefix shifts the cosine
  // to start at warmup_t (and end at warmup_t + t_initial).
  static Schedule cosine(double base_lr, int64_t t_initial, double min_lr = 0, int64_t warmup_t = 0,
                         double warmup_lr_init = 0, bool warmup_prefix = false);

  // The learning rate at t >= 0.
  double lr(int64_t t) const;
  // lr(t) relative to base_lr.
  double multiplier(int64_t t) const;

  Kind kind() const { return kind_; }
  double base_lr() const { return base_lr_; }

  // Plain data, e.g. {"kind": "cosine", "base_lr": 5e-4, "t_initial": 100, "min_lr": 1e-5,
  // "warmup_t": 10, "warmup_lr_init": 1e-6, "warmup_prefix": false}.
  nlohmann::json to_json() const;
  // Validates kind, every field (present, typed, in range) and no extra keys; the
  // vg::Error names the field.
  static Schedule from_json(const nlohmann::json& j);

 private:
  Schedule() = default;
  void validate() const;  // throws vg::Error naming the bad field

  Kind kind_ = Kind::constant;
  double base_lr_ = 0;
  int64_t step_size_ = 1;  // step
  double gamma_ = 0.1;
  int64_t t_initial_ = 1;  // cosine
  double min_lr_ = 0;
  int64_t warmup_t_ = 0;
  double warmup_lr_init_ = 0;
  bool warmup_prefix_ = false;
};

const char* schedule_kind_name(Schedule::Kind kind);

}  // namespace vg::optim
