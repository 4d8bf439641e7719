#include "layers/token_norm.h"

#include "layers/layer_norm.h"
#include "layers/learnable_scaler.h"

namespace vg::nn {

std::shared_ptr<TokenNorm> make_norm(NormKind kind, int64_t dim, Rng& rng) {
  if (kind == NormKind::layernorm) return std::make_shared<LayerNorm>(dim, 1e-6);
  return std::make_shared<LearnableScaler>(dim, rng);
}

}  // namespace vg::nn
