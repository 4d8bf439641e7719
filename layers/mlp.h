// The MLP of a transformer block, as timm's Mlp / GlobalResponseNormMlp:
// fc1 -> GELU -> dropout -> [GlobalResponseNorm over the tokens] -> fc2 -> dropout.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/core/rng.h"
#include "layers/activation.h"
#include "layers/dropout.h"
#include "layers/global_response_norm.h"
#include "layers/linear.h"
#include "layers/module.h"

namespace vg::nn {

class Mlp : public Module {
 public:
  // GRN (on the hidden features, ConvNeXt V2) only when use_grn; its spatial axis is the
  // token axis, cls token included.
  Mlp(int64_t dim, int64_t hidden_features, bool use_grn, double dropout, Rng& rng,
      std::shared_ptr<Rng> drop_rng = nullptr);

  // x (B, T, dim) -> (B, T, dim): drop2(fc2([grn](drop1(act(fc1(x)))))). Inside a Block
  // act, GRN and fc2 run as one engine op (layers/fusion.h).
  Tensor forward(const Tensor& x) override;

  Linear& fc1() { return *fc1_; }
  Linear& fc2() { return *fc2_; }
  GELU& act() { return *act_; }
  Dropout& drop1() { return *drop1_; }
  GlobalResponseNorm* grn() { return grn_.get(); }  // null without GRN
  Dropout& drop2() { return *drop2_; }

 private:
  std::shared_ptr<Linear> fc1_, fc2_;
  std::shared_ptr<GELU> act_;
  std::shared_ptr<GlobalResponseNorm> grn_;
  std::shared_ptr<Dropout> drop1_, drop2_;
};

}  // namespace vg::nn
