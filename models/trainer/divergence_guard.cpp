#include <cmath>

#include "models/trainer/observers.h"

namespace vg {
namespace {

// "NaN", "Inf", "-Inf" or the number.
std::string value_str(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
  return cat_str(v);
}

}  // namespace

void diverged(const Run& run, int64_t step, const std::string& what) {
  throw Error(cat_str("training diverged at step ", step, ": ", what, "; ", last_good(run)));
}

void DivergenceGuard::on_loss(const Run& run, int64_t step, double loss, double aux) {
  if (!std::isfinite(loss)) diverged(run, step, "the loss is " + value_str(loss));
  if (!std::isfinite(aux)) diverged(run, step, "the auxiliary loss is " + value_str(aux));
}

void DivergenceGuard::on_grad_norm(const Run& run, int64_t step, double norm) {
  if (!std::isfinite(norm)) diverged(run, step, "the gradient norm is " + value_str(norm));
}

}  // namespace vg
