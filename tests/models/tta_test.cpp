// Test-time flip averaging in evaluate().
#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "engine/data/loader.h"
#include "engine/ops/ops.h"
#include "models/training.h"

using namespace vg;

TEST_CASE("flip averaging is the cross-entropy of the mean of an image's and its mirror's logits") {
  const data::TensorDataset d = data::make_synthetic("test", 20, 3);
  ViT model(preset("fmnist-tiny"), 1);
  const EvalResult plain = evaluate(model, d, 8);
  const EvalResult tta = evaluate(model, d, 8, nullptr, true);
  // By hand over the whole set at once.
  NoGradGuard no_grad;
  model.eval();
  const data::Batch all = data::batch_in_order(d, 0, 20);
  Tensor mirrored = Tensor::empty(all.images.shape(), DType::f32);
  for (int64_t i = 0; i < 20; ++i)
    data::apply_augment(all.images.data<float>() + i * 784, mirrored.data<float>() + i * 784, 28,
                        28, 1, data::Augment{0, 0, true}, d.normalisation().black().data());
  const Tensor mean_logits = mul(add(model.forward(all.images), model.forward(mirrored)), 0.5);
  CHECK(tta.loss == doctest::Approx(cross_entropy(mean_logits, all.labels).item()).epsilon(1e-6));
  CHECK(tta.count == 20);
  CHECK(plain.loss != tta.loss);  // the shapes are not mirror-symmetric
}

TEST_CASE("flip averaging changes nothing for mirror-symmetric images") {
  const data::TensorDataset d = data::make_synthetic("test", 10, 5);
  Tensor images = d.images();  // a handle on the same pixels
  float* x = images.data<float>();
  for (int64_t i = 0; i < 10; ++i)  // make every row a palindrome
    for (int64_t y = 0; y < 28; ++y)
      for (int64_t c = 0; c < 14; ++c) x[(i * 28 + y) * 28 + 27 - c] = x[(i * 28 + y) * 28 + c];
  ViT model(preset("fmnist-tiny"), 2);
  const EvalResult plain = evaluate(model, d, 4);
  const EvalResult tta = evaluate(model, d, 4, nullptr, true);
  CHECK(tta.loss == plain.loss);  // (l + l) / 2 == l exactly
  CHECK(tta.accuracy == plain.accuracy);
}
