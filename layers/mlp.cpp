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
  Tensor h = (*drop1_)((*act_)((*fc1_)(x)));
  if (grn_) h = (*grn_)(h);
  return (*drop2_)((*fc2_)(h));
}

double Mlp::flop_count(const Shape& s) const {
  const Shape hidden = fc1_->output_shape(s);
  double flops = fc1_->flop_count(s) + act_->flop_count(hidden) + drop1_->flop_count(hidden) +
                 fc2_->flop_count(hidden) + drop2_->flop_count(s);
  if (grn_) flops += grn_->flop_count(hidden);
  return flops;
}

}  // namespace vg::nn
