#include "models/trainer/loss.h"

#include "engine/ops/ops.h"

namespace vg {

Tensor batch_cross_entropy(const Tensor& logits, const data::Batch& batch,
                           double label_smoothing) {
  return batch.targets.defined() ? cross_entropy(logits, batch.targets)
                                 : cross_entropy(logits, batch.labels, label_smoothing);
}

LossFn cross_entropy_loss(double label_smoothing) {
  return [label_smoothing](ViT& model, const data::Batch& batch) {
    MicroBatchLoss out;
    out.logits = model.forward(batch.images);
    out.total = batch_cross_entropy(out.logits, batch, label_smoothing);
    out.value = out.total.item();
    return out;
  };
}

int64_t count_correct(const Tensor& logits, const std::vector<int32_t>& labels,
                      std::vector<int32_t>* predictions) {
  const Tensor best = logits.detach().to(DType::f64);
  const int64_t K = logits.size(1);
  int64_t correct = 0;
  for (int64_t b = 0; b < logits.size(0); ++b) {
    const double* row = best.data<double>() + b * K;
    int64_t arg = 0;
    for (int64_t k = 1; k < K; ++k)
      if (row[k] > row[arg]) arg = k;
    correct += arg == labels[b];
    if (predictions) predictions->push_back(static_cast<int32_t>(arg));
  }
  return correct;
}

}  // namespace vg
