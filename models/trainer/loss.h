// What a training step minimises for one micro-batch: the loss to differentiate, its logits,
// and the numbers the step reports. The plain criterion is cross-entropy; a recipe may add
// terms (models/recipes/learnable_scaler.h adds its auxiliary losses).
#pragma once

#include <functional>

#include "engine/data/loader.h"
#include "models/vit.h"

namespace vg {

struct MicroBatchLoss {
  Tensor logits;     // (n, num_classes)
  Tensor total;      // the scalar backward() starts from
  double value = 0;  // the cross-entropy alone, as logged
  double aux = 0;    // the added terms (0 when there are none)
};

using LossFn = std::function<MicroBatchLoss(ViT& model, const data::Batch& batch)>;

// The batch's cross-entropy: against its soft targets when it was mixed (mixup/cutmix, whose
// targets already hold the label smoothing), else against its labels with the smoothing.
Tensor batch_cross_entropy(const Tensor& logits, const data::Batch& batch,
                           double label_smoothing);

// Cross-entropy with label smoothing.
LossFn cross_entropy_loss(double label_smoothing);

// Correct predictions (the first maximum wins a tie, as torch.argmax); each prediction is
// appended to `predictions` when given.
int64_t count_correct(const Tensor& logits, const std::vector<int32_t>& labels,
                      std::vector<int32_t>* predictions = nullptr);

}  // namespace vg
