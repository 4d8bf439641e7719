#include "engine/optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/error.h"

namespace vg::optim {
namespace {

using nlohmann::json;

bool finite_at_least(double x, double lo) {
  return std::isfinite(x) && x >= lo;
}

// The fields each kind has, besides "kind" and "base_lr".
std::vector<std::string> fields_of(Schedule::Kind kind) {
  switch (kind) {
    case Schedule::Kind::constant:
      return {};
    case Schedule::Kind::step:
      return {"step_size", "gamma"};
    case Schedule::Kind::cosine:
      return {"t_initial", "min_lr", "warmup_t", "warmup_lr_init", "warmup_prefix"};
  }
  return {};
}

double read_double(const json& j, const char* field) {
  check(j.contains(field), "schedule: missing field '", field, "'");
  check(j[field].is_number(), "schedule: field '", field, "' must be a number, got ",
        j[field].dump());
  return j[field].get<double>();
}

int64_t read_int(const json& j, const char* field) {
  check(j.contains(field), "schedule: missing field '", field, "'");
  check(j[field].is_number_integer(), "schedule: field '", field, "' must be an integer, got ",
        j[field].dump());
  return j[field].get<int64_t>();
}

}  // namespace

const char* schedule_kind_name(Schedule::Kind kind) {
  switch (kind) {
    case Schedule::Kind::constant:
      return "constant";
    case Schedule::Kind::step:
      return "step";
    case Schedule::Kind::cosine:
      return "cosine";
  }
  return "?";
}

Schedule Schedule::constant(double base_lr) {
  Schedule s;
  s.kind_ = Kind::constant;
  s.base_lr_ = base_lr;
  s.validate();
  return s;
}

Schedule Schedule::step(double base_lr, int64_t step_size, double gamma) {
  Schedule s;
  s.kind_ = Kind::step;
  s.base_lr_ = base_lr;
  s.step_size_ = step_size;
  s.gamma_ = gamma;
  s.validate();
  return s;
}

Schedule Schedule::cosine(double base_lr, int64_t t_initial, double min_lr, int64_t warmup_t,
                          double warmup_lr_init, bool warmup_prefix) {
  Schedule s;
  s.kind_ = Kind::cosine;
  s.base_lr_ = base_lr;
  s.t_initial_ = t_initial;
  s.min_lr_ = min_lr;
  s.warmup_t_ = warmup_t;
  s.warmup_lr_init_ = warmup_lr_init;
  s.warmup_prefix_ = warmup_prefix;
  s.validate();
  return s;
}

void Schedule::validate() const {
  const char* kind = schedule_kind_name(kind_);
  // base_lr 0 is allowed: a run that keeps the weights as initialised.
  check(finite_at_least(base_lr_, 0), "schedule (", kind,
        "): base_lr must be a finite number >= 0, got ", base_lr_);
  switch (kind_) {
    case Kind::constant:
      break;
    case Kind::step:
      check(step_size_ >= 1, "schedule (step): step_size must be >= 1, got ", step_size_);
      check(finite_at_least(gamma_, 0) && gamma_ > 0,
            "schedule (step): gamma must be a finite number > 0, got ", gamma_);
      break;
    case Kind::cosine:
      check(t_initial_ >= 1, "schedule (cosine): t_initial must be >= 1, got ", t_initial_);
      check(finite_at_least(min_lr_, 0),
            "schedule (cosine): min_lr must be a finite number "
            ">= 0, got ",
            min_lr_);
      check(warmup_t_ >= 0, "schedule (cosine): warmup_t must be >= 0, got ", warmup_t_);
      check(finite_at_least(warmup_lr_init_, 0),
            "schedule (cosine): warmup_lr_init must be a "
            "finite number >= 0, got ",
            warmup_lr_init_);
      break;
  }
}

double Schedule::lr(int64_t t) const {
  check(t >= 0, "schedule (", schedule_kind_name(kind_), "): t must be >= 0, got ", t);
  if (kind_ != Kind::cosine) return base_lr_ * multiplier(t);
  // timm's CosineLRScheduler._get_lr, in its order of operations.
  if (t < warmup_t_) {
    const double warmup_step = (base_lr_ - warmup_lr_init_) / static_cast<double>(warmup_t_);
    return warmup_lr_init_ + static_cast<double>(t) * warmup_step;
  }
  if (warmup_prefix_) t -= warmup_t_;
  if (t >= t_initial_) return min_lr_;  // past the one cycle (cycle_limit 1)
  return min_lr_ +
         0.5 * (base_lr_ - min_lr_) *
             (1 + std::cos(M_PI * static_cast<double>(t) / static_cast<double>(t_initial_)));
}

double Schedule::multiplier(int64_t t) const {
  check(t >= 0, "schedule (", schedule_kind_name(kind_), "): t must be >= 0, got ", t);
  switch (kind_) {
    case Kind::constant:
      return 1.0;
    case Kind::step:
      return std::pow(gamma_, static_cast<double>(t / step_size_));
    case Kind::cosine:
      return base_lr_ > 0 ? lr(t) / base_lr_ : 1.0;
  }
  return 1.0;
}

json Schedule::to_json() const {
  json j{{"kind", schedule_kind_name(kind_)}, {"base_lr", base_lr_}};
  switch (kind_) {
    case Kind::constant:
      break;
    case Kind::step:
      j["step_size"] = step_size_;
      j["gamma"] = gamma_;
      break;
    case Kind::cosine:
      j["t_initial"] = t_initial_;
      j["min_lr"] = min_lr_;
      j["warmup_t"] = warmup_t_;
      j["warmup_lr_init"] = warmup_lr_init_;
      j["warmup_prefix"] = warmup_prefix_;
      break;
  }
  return j;
}

Schedule Schedule::from_json(const json& j) {
  check(j.is_object(), "schedule: expected an object, got ", j.type_name());
  check(j.contains("kind") && j["kind"].is_string(),
        "schedule: missing string field 'kind' (constant, step or cosine)");
  Schedule s;
  const std::string kind = j["kind"].get<std::string>();
  bool known = false;
  for (Kind k : {Kind::constant, Kind::step, Kind::cosine}) {
    if (kind == schedule_kind_name(k)) {
      s.kind_ = k;
      known = true;
    }
  }
  check(known, "schedule: unknown kind '", kind,
        "' (expected constant, step or cosine)");
  std::vector<std::string> fields = fields_of(s.kind_);
  fields.push_back("kind");
  fields.push_back("base_lr");
  for (const auto& [key, value] : j.items())
    check(std::find(fields.begin(), fields.end(), key) != fields.end(), "schedule (", kind,
          "): unknown field '", key, "'");
  s.base_lr_ = read_double(j, "base_lr");
  switch (s.kind_) {
    case Kind::constant:
      break;
    case Kind::step:
      s.step_size_ = read_int(j, "step_size");
      s.gamma_ = read_double(j, "gamma");
      break;
    case Kind::cosine:
      s.t_initial_ = read_int(j, "t_initial");
      s.min_lr_ = read_double(j, "min_lr");
      s.warmup_t_ = read_int(j, "warmup_t");
      s.warmup_lr_init_ = read_double(j, "warmup_lr_init");
      check(j.contains("warmup_prefix") && j["warmup_prefix"].is_boolean(),
            "schedule (cosine): field 'warmup_prefix' must be true or false");
      s.warmup_prefix_ = j["warmup_prefix"].get<bool>();
      break;
  }
  s.validate();
  return s;
}

}  // namespace vg::optim
