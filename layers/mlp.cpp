#include "layers/mlp.h"

namespace vg::nn {

Mlp::Mlp(int64_t dim, int64_t hidden_features, bool use_grn, double dropout, Rng& rng,
         std::shared_ptr<Rng> drop_rng)
    : Module("Mlp") {
  fc1_ = register_module("fc1", std::make_shared<Linear>(dim, hidden_features, true, rng));
  act_ = register_module("act", std::make_shared<GELU>());
  drop1_ = register_module("drop1", std::make_shared<Dropout>(dropout, drop_rng));
  if (use_grn)
    grn_ = register_module("grn", std::make_shared<GlobalResponseNorm>(hidden_features));
  fc2_ = register_module("fc2", std::make_shared<Linear>(hidden_features, dim, true, rng));
  drop2_ = register_module("drop2", std::make_shared<Dropout>(dropout, drop_rng));
}

Tensor Mlp::forward(const Tensor& x) {
  auto scope = enter();
  Tensor h = fc1_->forward(x);
  // With nothing between act and fc2, one fused op runs both: it keeps fc1's output for
  // backward and recomputes GELU's there, instead of keeping a second tensor of the hidden
  // size (the largest activation of a block). Same bits as the two modules.
  if (!grn_ && !drop1_->active())
    return drop2_->forward(gelu_linear(h, fc2_->weight(), fc2_->bias(), act_->approx()));
  h = drop1_->forward(act_->forward(h));
  if (grn_) h = grn_->forward(h);
  return drop2_->forward(fc2_->forward(h));
}

double Mlp::flop_count(const Shape& s) const {
  const Shape hidden = fc1_->output_shape(s);
  double flops = fc1_->flop_count(s) + act_->flop_count(hidden) + drop1_->flop_count(hidden) +
                 fc2_->flop_count(hidden) + drop2_->flop_count(s);
  if (grn_) flops += grn_->flop_count(hidden);
  return flops;
}

}  // namespace vg::nn
