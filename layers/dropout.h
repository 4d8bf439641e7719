// Dropout (per element) and DropPath (stochastic depth, per sample). Both draw their masks
// from a generator shared with the model, so a checkpoint can save its state and a resumed
// run draws the same masks. Both are the identity in eval mode or at rate 0.
#pragma once

#include <memory>
#include <string>

#include "engine/core/rng.h"
#include "layers/module.h"

namespace vg::nn {

class Dropout : public Module {
 public:
  // p in [0, 1): the probability of zeroing an element; rng may be null only when p == 0.
  Dropout(double p, std::shared_ptr<Rng> rng);

  // Zeroes each element with probability p and scales the rest by 1/(1-p) when training.
  Tensor forward(const Tensor& x) override;

  double p() const { return p_; }
  // Training with p > 0: forward changes its input.
  bool active() const { return is_training() && p_ > 0; }

 private:
  double p_;
  std::shared_ptr<Rng> rng_;
};

class DropPath : public Module {
 public:
  // drop_prob in [0, 1): the probability of dropping a sample's whole residual branch.
  DropPath(double drop_prob, std::shared_ptr<Rng> rng);

  // x (B, ...): one Bernoulli(keep = 1 - drop_prob) draw per sample; kept samples are
  // scaled by 1/keep, so the expectation is unchanged (timm's scale_by_keep).
  Tensor forward(const Tensor& x) override;

  double drop_prob() const { return drop_prob_; }
  // Whether forward does anything: training with drop_prob > 0 (otherwise it returns x).
  bool active() const { return is_training() && drop_prob_ > 0; }

 private:
  std::string describe() const;  // "DropPath(drop_prob=0.1)"

  double drop_prob_;
  std::shared_ptr<Rng> rng_;
};

}  // namespace vg::nn
