#include "models/trainer/schedule.h"

#include <algorithm>

namespace vg {

using nlohmann::json;

RunSchedule RunSchedule::for_run(const TrainOptions& o, int64_t total_steps,
                                 int64_t steps_per_epoch) {
  if (o.sched == "constant") return optim::Schedule::constant(o.lr);
  if (o.sched == "step")  // a tenth of the rate at each third of the run
    return optim::Schedule::step(o.lr, std::max<int64_t>(1, total_steps / 3), 0.1);
  if (o.sched == "learnable-scaler") {
    const int64_t epochs = (total_steps + steps_per_epoch - 1) / steps_per_epoch;
    return recipes::LearnableScalerSchedule(o.lr, std::max<int64_t>(1, epochs), o.sched_factor,
                                            o.sched_threshold);
  }
  return optim::Schedule::cosine(o.lr, total_steps, std::min(o.min_lr, o.lr), o.warmup, 0.0);
}

double RunSchedule::lr_at(int64_t step, int64_t steps_per_epoch) const {
  if (const auto* per_epoch = std::get_if<recipes::LearnableScalerSchedule>(&schedule_))
    return per_epoch->lr(step / steps_per_epoch);
  return std::get<optim::Schedule>(schedule_).lr(step);
}

int64_t RunSchedule::floor_step(int64_t steps_per_epoch) const {
  if (const auto* per_epoch = std::get_if<recipes::LearnableScalerSchedule>(&schedule_))
    return per_epoch->num_epochs() * steps_per_epoch;
  const optim::Schedule& s = std::get<optim::Schedule>(schedule_);
  if (s.kind() != optim::Schedule::Kind::cosine) return -1;
  const json j = s.to_json();
  const int64_t t_initial = j.at("t_initial").get<int64_t>();
  return j.at("warmup_prefix").get<bool>() ? t_initial + j.at("warmup_t").get<int64_t>()
                                           : t_initial;
}

json RunSchedule::to_json() const {
  return std::visit([](const auto& s) { return s.to_json(); }, schedule_);
}

RunSchedule RunSchedule::from_json(const json& j) {
  if (j.is_object() && j.contains("kind") && j["kind"] == recipes::kLearnableScalerScheduleKind)
    return recipes::LearnableScalerSchedule::from_json(j);
  return optim::Schedule::from_json(j);
}

}  // namespace vg
