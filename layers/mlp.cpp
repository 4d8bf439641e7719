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

}  // namespace vg::nn
