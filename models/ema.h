// Model EMA: a shadow copy of a model whose parameters follow p_ema = d * p_ema + (1-d) * p
// after every optimiser step (LayerScale gammas included), used for evaluation.
#pragma once

#include <memory>

#include "models/vit.h"

namespace vg {

class ModelEma {
 public:
  // The shadow starts as a copy of `model`'s current weights, in eval mode.
  ModelEma(const ViT& model, double decay);

  void update(const ViT& model);
  ViT& model() { return *shadow_; }
  double decay() const { return decay_; }

 private:
  double decay_;
  std::unique_ptr<ViT> shadow_;
};

}  // namespace vg
