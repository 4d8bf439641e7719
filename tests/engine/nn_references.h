// Plain compositions of primitive ops: the references that the fused softmax, layer_norm
// and cross_entropy are checked against (tests of each op and the shared tests in nn_test).
#pragma once

#include <vector>

#include "engine/ops/ops.h"

namespace vg::testing {

inline Tensor reference_softmax(const Tensor& x) {
  Tensor e = exp(x - max(x, {-1}, true).detach());
  return e / sum(e, {-1}, true);
}
inline Tensor reference_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  Tensor centred = x - mean(x, {-1}, true);
  Tensor y = centred / sqrt(mean(centred * centred, {-1}, true) + eps);
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y;
}
// -sum(q * logp) / B with q = (1 - eps) onehot + eps / K.
inline Tensor reference_cross_entropy(const Tensor& z, const std::vector<int32_t>& labels, double eps) {
  const int64_t B = z.size(0), K = z.size(1);
  Tensor q = full({B, K}, eps / double(K), z.dtype());
  for (int64_t b = 0; b < B; ++b) q.set_at({b, labels[b]}, 1 - eps + eps / double(K));
  Tensor logp = log(reference_softmax(z));
  return -sum(q * logp) / double(B);
}

inline std::vector<double> row_sums(const Tensor& t) {
  return sum(t, {-1}).to_vector();
}

}  // namespace vg::testing
