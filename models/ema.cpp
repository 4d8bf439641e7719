#include "models/ema.h"

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"

namespace vg {

ModelEma::ModelEma(const ViT& model, double decay)
    : decay_(decay), shadow_(std::make_unique<ViT>(model.config(), 0)) {
  check(decay >= 0 && decay <= 1, "ModelEma: decay must be in [0, 1], got ", decay);
  // A model that gained LayerScale after it was built (apply_layerscale_to_blocks) has more
  // parameters than its config says: the shadow gets the same LayerScales before the copy,
  // which then overwrites their init value.
  for (int64_t i = 0; i < model.depth(); ++i)
    if (model.block(i).has_layerscale() && !shadow_->block(i).has_layerscale())
      shadow_->block(i).add_layerscale(1.0);
  shadow_->load_state_dict(model.state_dict());
  shadow_->eval();
}

void ModelEma::update(const ViT& model) {
  NoGradGuard no_grad;
  const ParameterList source = model.named_parameters();
  const ParameterList target = shadow_->named_parameters();
  check(source.size() == target.size(), "ModelEma: the model's parameters changed");
  for (size_t i = 0; i < source.size(); ++i) {
    const Tensor& p = source[i].tensor;
    Tensor q = target[i].tensor;
    check(source[i].name == target[i].name && p.shape() == q.shape(), "ModelEma: parameter '",
          source[i].name, "' does not match the shadow's");
    dispatch(q.dtype(), [&](auto z) {
      using T = decltype(z);
      const T* src = p.data<T>();
      T* dst = q.data<T>();
      const T d = static_cast<T>(decay_), keep = static_cast<T>(1 - decay_);
      parallel_for(q.numel(), 1 << 15, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) dst[k] = d * dst[k] + keep * src[k];
      });
    });
  }
}

}  // namespace vg
