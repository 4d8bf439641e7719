// cross_entropy of (B, K) logits, with class labels (and label smoothing) or with soft
// targets; the mean over the batch. Saved for backward: the logits and the log-sum-exp of
// each row, from which the softmax is rebuilt (B numbers instead of a (B, K) probability
// tensor). The row loops are kernels/cross_entropy_rows.h.
#include <memory>

#include "engine/autograd/autograd.h"
#include "engine/kernels/cross_entropy_rows.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

void check_logits(const Tensor& logits) {
  check(logits.defined(), "cross_entropy: undefined logits");
  check(logits.dim() == 2, "cross_entropy: logits must be (B, K), got shape ", logits.shape());
  check(logits.size(0) > 0 && logits.size(1) > 0, "cross_entropy: empty logits of shape ",
        logits.shape());
}

// Sums per-row losses in row order (deterministic) and divides by the batch size.
Tensor batch_mean(const std::vector<double>& row_loss, DType dtype) {
  double total = 0;
  for (double l : row_loss) total += l;
  return full({}, total / double(row_loss.size()), dtype);
}

}  // namespace

// loss_b = (1-eps)(-logp_y) + eps * mean_k(-logp_k) = lse - (1-eps) z_y - eps * mean_k z_k.
Tensor cross_entropy(const Tensor& logits, const std::vector<int32_t>& labels,
                     double label_smoothing) {
  check_logits(logits);
  const int64_t B = logits.size(0), K = logits.size(1);
  check(int64_t(labels.size()) == B, "cross_entropy: ", labels.size(), " labels for a batch of ", B,
        " (logits shape ", logits.shape(), ")");
  for (int64_t b = 0; b < B; ++b) {
    if (labels[b] < 0 || labels[b] >= K)
      throw Error(cat_str("cross_entropy: label ", labels[b], " at batch index ", b,
                          " is outside [0, ", K, ") (logits shape ", shape_str(logits.shape()),
                          ")"));
  }
  const double eps = label_smoothing;
  check(eps >= 0 && eps <= 1, "cross_entropy: label_smoothing must be in [0, 1], got ", eps);
  auto lse = std::make_shared<std::vector<double>>(B);
  std::vector<double> row_loss(B);
  dispatch(logits.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::cross_entropy_rows(logits.data<T>(), labels.data(), B, K, eps, lse->data(),
                                row_loss.data());
  });
  add_flops(6.0 * double(B * K));  // max, subtract, exp, sum, mean, weighted target
  Tensor loss = batch_mean(row_loss, logits.dtype());
  if (!any_requires_grad({logits})) return record("cross_entropy", loss, {logits}, nullptr);
  Tensor zs = logits.detach();
  auto ys = std::make_shared<std::vector<int32_t>>(labels);
  // dL/dz = (softmax(z) - q) / B with q = (1 - eps) onehot(y) + eps / K.
  return record("cross_entropy", loss, {logits}, [zs, lse, ys, eps, B, K](const Tensor& g) {
    Tensor dz = Tensor::empty(zs.shape(), zs.dtype());
    const double scale = g.item() / double(B);
    dispatch(zs.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::cross_entropy_grad_rows(zs.data<T>(), ys->data(), lse->data(), B, K, eps, scale,
                                       dz.data<T>());
    });
    return std::vector<Tensor>{dz};
  });
}

// loss_b = sum_k -t_k logp_k = lse * sum(t) - sum(t * z).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  check_logits(logits);
  const int64_t B = logits.size(0), K = logits.size(1);
  check(targets.defined() && targets.shape() == logits.shape(), "cross_entropy: targets of shape ",
        targets.defined() ? shape_str(targets.shape()) : "undefined",
        " do not match logits of shape ", logits.shape());
  check(targets.dtype() == logits.dtype(), "cross_entropy: targets are ",
        dtype_name(targets.dtype()), ", logits are ", dtype_name(logits.dtype()));
  auto lse = std::make_shared<std::vector<double>>(B);
  std::vector<double> row_loss(B);
  dispatch(logits.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::soft_cross_entropy_rows(logits.data<T>(), targets.data<T>(), B, K, lse->data(),
                                     row_loss.data());
  });
  add_flops(7.0 * double(B * K));  // max, subtract, exp, sum, sum(t), t * z and its sum
  Tensor loss = batch_mean(row_loss, logits.dtype());
  if (!any_requires_grad({logits})) return record("cross_entropy_soft", loss, {logits}, nullptr);
  Tensor zs = logits.detach(), ts = targets.detach();
  // dL/dz = (softmax(z) * sum(t) - t) / B; the targets get no gradient.
  return record("cross_entropy_soft", loss, {logits}, [zs, ts, lse, B, K](const Tensor& g) {
    Tensor dz = Tensor::empty(zs.shape(), zs.dtype());
    const double scale = g.item() / double(B);
    dispatch(zs.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::soft_cross_entropy_grad_rows(zs.data<T>(), ts.data<T>(), lse->data(), B, K, scale,
                                            dz.data<T>());
    });
    return std::vector<Tensor>{dz};
  });
}

}  // namespace vg
