#include "layers/dropout.h"

#include "engine/ops/ops.h"

namespace vg::nn {

// --- Dropout ---------------------------------------------------------------------------------

Dropout::Dropout(double p, std::shared_ptr<Rng> rng)
    : Module("Dropout"), p_(p), rng_(std::move(rng)) {
  check(p >= 0 && p < 1, "Dropout(p=", p, "): p must be in [0, 1)");
  check(p == 0 || rng_ != nullptr, "Dropout(p=", p, "): needs a random generator");
}

Tensor Dropout::forward(const Tensor& x) {
  if (!active()) return x;
  return dropout(x, p_, *rng_, true);
}

// --- DropPath --------------------------------------------------------------------------------

DropPath::DropPath(double drop_prob, std::shared_ptr<Rng> rng)
    : Module("DropPath"), drop_prob_(drop_prob), rng_(std::move(rng)) {
  check(drop_prob >= 0 && drop_prob < 1, describe(), ": drop_prob must be in [0, 1)");
  check(drop_prob == 0 || rng_ != nullptr, describe(), ": needs a random generator");
}

std::string DropPath::describe() const {
  return cat_str("DropPath(drop_prob=", drop_prob_, ")");
}

Tensor DropPath::forward(const Tensor& x) {
  if (!active()) return x;
  const auto name = [this] { return describe(); };
  check(x.dim() >= 1, name, ": input must have a batch axis, got shape ", x.shape());
  // The mask (B, 1, ..., 1) holds 0 or 1/keep per sample and broadcasts over the rest;
  // mul's backward then reuses it: dx = dy * mask.
  const double keep = 1.0 - drop_prob_;
  Shape mask_shape(x.dim(), 1);
  mask_shape[0] = x.size(0);
  Tensor mask = Tensor::empty(mask_shape, x.dtype());
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    T* m = mask.data<T>();
    for (int64_t b = 0; b < x.size(0); ++b) m[b] = rng_->bernoulli(keep) ? T(1.0 / keep) : T(0);
  });
  return mul(x, mask);
}

}  // namespace vg::nn
