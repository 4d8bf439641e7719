// The two auxiliary losses of the LearnableScaler training recipe, fused, forward and
// backward side by side. Both are reductions to a scalar over activations that the normal
// path already holds, so they cost one pass over their input and save only the input.
//
// Both have points where they are not differentiable (the hinge's kink at the threshold,
// ties of a maximum, a row whose maximum crosses the peak level); there they follow what
// PyTorch's autograd does for the reference's code: the hinge is off at |x| == threshold, a
// full max spreads its gradient evenly over ties, a max over one axis sends it to the first.
#include <cmath>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/kernels/aux_loss_sums.h"
#include "engine/ops/ops.h"

namespace vg {

// danger = |x| - t over the elements with |x| > t; loss = mean(danger) + max(danger), 0 when
// no element is above t. dloss/dx = sign(x) * (1/count + [danger == max] / ties).
Tensor feature_decay_loss(const Tensor& x, double threshold) {
  check(x.defined(), "feature_decay_loss: undefined input");
  check(std::isfinite(threshold) && threshold >= 0,
        "feature_decay_loss: threshold must be finite and >= 0, got ", threshold);
  kernels::FeatureDecaySums sums;
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    sums = kernels::feature_decay_sums(x.data<T>(), x.numel(), threshold);
  });
  const int64_t count = sums.count, ties = sums.ties;
  const double top = sums.top;
  add_flops(3.0 * double(x.numel()));  // abs, compare, sum
  Tensor loss = full({}, count ? sums.sum / double(count) + top : 0.0, x.dtype());
  // With no element above the threshold the gradient is zero: the loss is a constant.
  if (!any_requires_grad({x}) || count == 0) return loss;
  Tensor xs = x.detach();
  return record("feature_decay_loss", loss, {x}, [=](const Tensor& g) {
    Tensor dx = Tensor::empty(xs.shape(), xs.dtype());
    const double go = g.item(), per_mean = go / double(count), per_max = go / double(ties);
    dispatch(xs.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::feature_decay_grad(xs.data<T>(), xs.numel(), threshold, top, per_mean, per_max,
                                  dx.data<T>());
    });
    return std::vector<Tensor>{dx};
  });
}

// Per row of probs (..., T): m = max_j p_j; over the rows with m < min_peak,
// loss = 1 - mean(m), 0 when there are none. dloss/dp = -1/bad at each such row's first
// maximum.
Tensor attention_peak_loss(const Tensor& probs, double min_peak) {
  check(probs.defined(), "attention_peak_loss: undefined input");
  check(probs.dim() >= 1 && probs.size(-1) > 0,
        "attention_peak_loss: probabilities need a non-empty last axis, got shape ", probs.shape());
  check(std::isfinite(min_peak), "attention_peak_loss: min_peak must be finite, got ", min_peak);
  const int64_t T = probs.size(-1), rows = probs.numel() / T;
  std::vector<int64_t> bad_at(rows);  // flat index of the maximum of each row below the peak
  double sum = 0;
  dispatch(probs.dtype(), [&](auto z) {
    using E = decltype(z);
    bad_at.resize(kernels::peaks_below(probs.data<E>(), rows, T, min_peak, bad_at.data(), &sum));
  });
  bad_at.shrink_to_fit();  // kept by the backward
  add_flops(double(probs.numel()));
  const int64_t bad = static_cast<int64_t>(bad_at.size());
  Tensor loss = full({}, bad ? 1.0 - sum / double(bad) : 0.0, probs.dtype());
  if (!any_requires_grad({probs}) || bad == 0) return loss;  // zero gradient: a constant
  const Shape shape = probs.shape();
  return record("attention_peak_loss", loss, {probs}, [=](const Tensor& g) {
    Tensor dp = zeros(shape, g.dtype());
    const double each = -g.item() / double(bad);
    dispatch(g.dtype(), [&](auto z) {
      using E = decltype(z);
      E* d = dp.data<E>();
      for (int64_t at : bad_at) d[at] = E(each);
    });
    return std::vector<Tensor>{dp};
  });
}

}  // namespace vg
