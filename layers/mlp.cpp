#include "layers/mlp.h"

namespace vg::nn {

Mlp::Mlp(int64_t dim, int64_t hidden_features, bool use_grn, double dropout, Rng& rng,
         std::shared_ptr<Rng> drop_rng)
    : Module("Mlp") {
  fc1_ = register_module("fc1", std::make_shared<Linear>(dim, hidden_features, true, rng));
  act_ = register_module("act", std::make_shared<GELU>());
  drop1_ = register_module("drop1", std::make_shared<Dropout>(dropout, drop_rng));
  if (use_grn) grn_ = register_module("grn", std::make_shared<GlobalResponseNorm>(hidden_features));
  fc2_ = register_module("fc2", std::make_shared<Linear>(hidden_features, dim, true, rng));
  drop2_ = register_module("drop2", std::make_shared<Dropout>(dropout, drop_rng));
}

Tensor Mlp::forward(const Tensor& x) {
  return forward(x, LinearFusion{});
}

Tensor Mlp::forward(const Tensor& x, const LinearFusion& fusion) {
  auto scope = enter();
  Tensor h = fc1_->forward(x, {.input_norm = fusion.input_norm, .out_scale = Tensor()});
  // With nothing random between act and fc2, one fused op runs act, GRN and fc2: it keeps
  // fc1's output for backward and recomputes the rest there, instead of keeping one or two
  // more tensors of the hidden size (the largest activations of a block). Dropout commutes
  // with the per-channel output scale.
  const Tensor& s = fusion.out_scale;
  if (!drop1_->active()) {
    if (!grn_)
      return drop2_->forward(gelu_linear(h, fc2_->weight(), fc2_->bias(), act_->approx(), s));
    return drop2_->forward(gelu_grn_linear(h, grn_->gamma(), grn_->beta(), grn_->eps(),
                                           fc2_->weight(), fc2_->bias(), act_->approx(), s));
  }
  h = drop1_->forward(act_->forward(h));
  if (grn_) h = grn_->forward(h);
  return drop2_->forward(fc2_->forward(h, {.out_scale = s}));
}

double Mlp::flop_count(const Shape& s) const {
  const Shape hidden = fc1_->output_shape(s);
  double flops = fc1_->flop_count(s) + act_->flop_count(hidden) + drop1_->flop_count(hidden) +
                 fc2_->flop_count(hidden) + drop2_->flop_count(s);
  if (grn_) flops += grn_->flop_count(hidden);
  return flops;
}

}  // namespace vg::nn
