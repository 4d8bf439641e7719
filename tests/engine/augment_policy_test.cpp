// The loader's augmentation policy (RandAugment, random erasing, mixup/cutmix): where its
// draws come from, what a batch then holds, and that a saved loader resumes it exactly.
#include <doctest/doctest.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/loader.h"
#include "tests/engine/bits_helpers.h"

using namespace vg;
using vg::testing::same_bits;
using namespace vg::data;

namespace {

// n grey 6x5 images made from bytes, as Fashion-MNIST is, labels i % 4.
TensorDataset grey_dataset(int64_t n = 10) {
  Rng rng(4);
  std::vector<uint8_t> pixels(n * 6 * 5);
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng.below(256));
  const Normalisation norm{{0.2860}, {0.3530}};
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(static_cast<int32_t>(i % 4));
  return TensorDataset(normalise_pixels(pixels, {n, 6, 5, 1}, norm), labels, 4, norm, "grey");
}

AugmentPolicy everything() {
  AugmentPolicy p;
  p.rand_augment = parse_rand_augment("rand-m7-mstd0.5");
  p.random_erasing.prob = 0.5;
  p.mixup.mixup_alpha = 0.1;  // the reference recipe's --mixup 0.1 --cutmix 1
  p.mixup.cutmix_alpha = 1.0;
  p.mixup.num_classes = 6;  // wider than the data's 4, as a model's head may be
  return p;
}

}  // namespace

TEST_CASE("a loader with every augmentation resumed from its state gives the same batches") {
  const TensorDataset data = grey_dataset(10);
  Loader run(data, 4, true, true, 9, true, everything());
  for (int i = 0; i < 4; ++i) run.next();  // into the second epoch
  const LoaderState saved = run.state();
  std::vector<Batch> rest;
  for (int i = 0; i < 5; ++i) rest.push_back(run.next());
  Loader resumed(data, 4, true, true, 9, true, everything());
  resumed.set_state(saved);
  for (int i = 0; i < 5; ++i) {
    INFO("batch ", i, " after the resume");
    const Batch b = resumed.next();
    CHECK(same_bits(b.images, rest[i].images));
    CHECK(same_bits(b.targets, rest[i].targets));
    CHECK(b.indices == rest[i].indices);
  }
  // Augmented: the images differ from the plain ones, and the targets are soft rows of 6.
  REQUIRE(rest[0].targets.defined());
  CHECK(rest[0].targets.shape() == Shape{4, 6});
}

TEST_CASE("a loader's mixup is mix_images of the plain batch with the loader's next draws") {
  const TensorDataset data = grey_dataset(8);
  AugmentPolicy policy;
  policy.mixup.mixup_alpha = 0.4;
  policy.mixup.label_smoothing = 0.1;
  policy.mixup.num_classes = 4;
  Loader plain(data, 4, true, false, 3);
  Loader mixed(data, 4, true, false, 3, true, policy);
  for (int i = 0; i < 3; ++i) {
    Rng replay(0);
    replay.set_state(mixed.state().augment_rng);
    const MixParams p = draw_mix_params(policy.mixup, 6, 5, replay);
    Batch want = plain.next();
    mix_images(want.images, p);
    const Batch got = mixed.next();
    INFO("batch ", i, " lambda ", p.lam);
    CHECK(p.lam < 1.0);
    CHECK(same_bits(got.images, want.images));
    CHECK(same_bits(got.targets, mixup_targets(want.labels, 4, p.lam, 0.1)));
    CHECK(got.labels == want.labels);  // the hard labels stay, for the accuracy
  }
  // Without a policy nothing is drawn and no targets are made.
  Loader again(data, 4, true, false, 3);
  const RngState before = again.state().augment_rng;
  CHECK_FALSE(again.next().targets.defined());
  CHECK(again.state().augment_rng == before);
}

TEST_CASE("RandAugment that applies nothing leaves the normalised pixels' bits as they were") {
  const TensorDataset data = grey_dataset(6);
  AugmentPolicy policy;
  policy.rand_augment = parse_rand_augment("rand-m9-p0");
  Loader plain(data, 3, false, false, 1);
  Loader augmented(data, 3, false, false, 1, true, policy);
  const RngState before = augmented.state().augment_rng;
  CHECK(same_bits(augmented.next().images, plain.next().images));
  CHECK_FALSE(augmented.state().augment_rng == before);  // the choices were still drawn
  // One operation always applied: some image changes.
  policy.rand_augment = parse_rand_augment("rand-m9-p1-n1");
  Loader strong(data, 6, false, false, 1, true, policy);
  const Batch b = strong.next();
  CHECK_FALSE(same_bits(b.images, Loader(data, 6, false, false, 1).next().images));
}

TEST_CASE("a policy the data cannot take is one clear error") {
  const TensorDataset grey = grey_dataset(4);
  const TensorDataset rgb(Tensor::empty({4, 2, 5, 3}, DType::f32), grey.labels(), 4,
                          Normalisation::identity(3), "grey");
  AugmentPolicy policy;
  policy.rand_augment = RandAugmentConfig{};
  CHECK_THROWS_WITH_AS(Loader(rgb, 2, false, false, 0, true, policy),
                       doctest::Contains("RandAugment needs single-channel images, data set "
                                         "'grey' has 3 channels"),
                       Error);
  AugmentPolicy mix;
  mix.mixup.cutmix_alpha = 1;
  CHECK_THROWS_WITH_AS(Loader(grey, 2, false, false, 0, true, mix),
                       doctest::Contains("num_classes must be positive"), Error);
}
