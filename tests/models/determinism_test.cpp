// The same training step on 1 and on 2 threads: every kernel, BLAS products included, must
// split its work along lines that depend on the shapes only, so the bits do not change.
// (Where the CPU has no AVX2, OpenBLAS computes the float products, and its kernels give other
// last bits for other block shapes.)
#include <doctest/doctest.h>

#include <vector>

#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/ops/ops.h"
#include "models/vit.h"

using namespace vg;

namespace {

// Loss, logits and every parameter gradient of one forward and backward of fmnist-tiny with
// LayerScale and GRN on 50 images (products big enough that gemm() cuts them into blocks,
// of a row count that two threads would have cut differently).
std::vector<std::vector<double>> training_step(int threads) {
  set_num_threads(threads);
  ViTConfig config = preset("fmnist-tiny");
  config.layerscale = LayerScaleSetting::fixed(1e-4);
  config.grn = true;
  ViT model(config, 7);
  Rng rng(3);
  const Tensor images = randn({50, 28, 28, 1}, rng);
  std::vector<int32_t> labels(50);
  for (int i = 0; i < 50; ++i) labels[i] = i % 10;
  const Tensor logits = model(images);
  const Tensor loss = cross_entropy(logits, labels, 0.1);
  loss.backward();
  std::vector<std::vector<double>> out{loss.to_vector(), logits.to_vector()};
  for (const Parameter& p : model.named_parameters()) out.push_back(p.tensor.grad().to_vector());
  return out;
}

}  // namespace

TEST_CASE("A ViT training step gives the same bits on 1 and 2 threads") {
  const int previous = num_threads();
  const auto one = training_step(1), two = training_step(2);
  set_num_threads(previous);
  REQUIRE(one.size() == two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("result ", i, " (0: loss, 1: logits, then the parameters' gradients in order)");
    CHECK(one[i] == two[i]);
  }
}
