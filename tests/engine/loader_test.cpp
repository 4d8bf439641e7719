#include "engine/data/loader.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "tests/engine/bits_helpers.h"

using namespace vg;
using vg::testing::same_bits;
using namespace vg::data;

namespace {

// n distinct random images of 5x6 with 2 channels (non-square, multi-channel: a mix-up of
// rows, columns or channels shows), labels i % 3. Each channel has its own normalisation,
// so black is -0.5 on channel 0 and -2 on channel 1.
TensorDataset small_dataset(int64_t n = 23) {
  Rng rng(11);
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(static_cast<int32_t>(i % 3));
  return TensorDataset(randn({n, 5, 6, 2}, rng), labels, 3, {{0.25, 0.5}, {0.5, 0.25}}, "small");
}

const float* image(const TensorDataset& d, int64_t i) {
  return d.images().data<float>() + i * 60;
}

// Every sample index of one epoch, in the order the loader gives them.
std::vector<int64_t> one_epoch(Loader& loader) {
  std::vector<int64_t> seen;
  for (int64_t b = 0; b < loader.batches_per_epoch(); ++b) {
    const Batch batch = loader.next();
    seen.insert(seen.end(), batch.indices.begin(), batch.indices.end());
  }
  return seen;
}

// The augmentation that turns src into out, if any does.
bool find_augment(const float* src, const float* out, const float* pad, Augment& found) {
  std::vector<float> candidate(5 * 6 * 2);
  for (int flip = 0; flip < 2; ++flip)
    for (int dy = -2; dy <= 2; ++dy)
      for (int dx = -2; dx <= 2; ++dx) {
        const Augment a{dy, dx, flip == 1};
        apply_augment(src, candidate.data(), 5, 6, 2, a, pad);
        if (std::memcmp(candidate.data(), out, candidate.size() * sizeof(float)) == 0) {
          found = a;
          return true;
        }
      }
  return false;
}

}  // namespace

TEST_CASE("a loader gives every sample once per epoch and keeps the last partial batch") {
  const TensorDataset data = small_dataset(23);
  Loader loader(data, 5, true, false, 3);
  CHECK(loader.batches_per_epoch() == 5);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> seen;
    for (int64_t b = 0; b < 5; ++b) {
      const Batch batch = loader.next();
      INFO("epoch ", epoch, " batch ", b);
      const int64_t n = b < 4 ? 5 : 3;
      CHECK(batch.images.shape() == Shape{n, 5, 6, 2});
      REQUIRE(batch.indices.size() == static_cast<size_t>(n));
      CHECK(batch.epoch == epoch);
      CHECK(batch.last_in_epoch == (b == 4));
      // Without augmentation a batch holds the raw normalised images and their labels.
      for (int64_t i = 0; i < n; ++i) {
        CHECK(std::memcmp(batch.images.data<float>() + i * 60, image(data, batch.indices[i]),
                          60 * sizeof(float)) == 0);
        CHECK(batch.labels[i] == data.labels()[batch.indices[i]]);
      }
      seen.insert(seen.end(), batch.indices.begin(), batch.indices.end());
    }
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(23);
    for (int64_t i = 0; i < 23; ++i) all[i] = i;
    CHECK(seen == all);
  }
  CHECK(loader.state().epoch == 2);
  CHECK(loader.state().cursor == 0);
}

TEST_CASE("each epoch has its own permutation, and the same seed gives the same order") {
  const TensorDataset data = small_dataset(23);
  Loader a(data, 4, true, false, 9), b(data, 4, true, false, 9), c(data, 4, true, false, 10);
  const std::vector<int64_t> a0 = one_epoch(a), a1 = one_epoch(a);
  CHECK(a0 != a1);
  CHECK(one_epoch(b) == a0);
  CHECK(one_epoch(b) == a1);
  CHECK(one_epoch(c) != a0);
  std::vector<int64_t> identity(23);
  for (int64_t i = 0; i < 23; ++i) identity[i] = i;
  CHECK(a0 != identity);
  Loader in_order(data, 4, false, false, 9);
  CHECK(one_epoch(in_order) == identity);
  CHECK(one_epoch(in_order) == identity);
}

TEST_CASE("flip is a mirror, and twice is the identity") {
  const TensorDataset data = small_dataset(1);
  const float* src = image(data, 0);
  std::vector<float> once(60), twice(60);
  const std::vector<float> pad = data.normalisation().black();
  apply_augment(src, once.data(), 5, 6, 2, {0, 0, true}, pad.data());
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 6; ++x)
      for (int c = 0; c < 2; ++c)
        CHECK(once[(y * 6 + x) * 2 + c] == src[(y * 6 + (5 - x)) * 2 + c]);
  apply_augment(once.data(), twice.data(), 5, 6, 2, {0, 0, true}, pad.data());
  CHECK(std::memcmp(twice.data(), src, 60 * sizeof(float)) == 0);
}

TEST_CASE("a crop shifts the content and pads with the normalised black pixel") {
  const TensorDataset data = small_dataset(1);
  const std::vector<float> pad = data.normalisation().black();
  // (0 - 0.25) / 0.5 and (0 - 0.5) / 0.25: zero in the original pixel space, per channel
  CHECK(pad == std::vector<float>{-0.5f, -2.0f});
  const float* src = image(data, 0);
  for (const bool flip : {false, true})
    for (int dy = -2; dy <= 2; ++dy)
      for (int dx = -2; dx <= 2; ++dx) {
        INFO("dy ", dy, " dx ", dx, " flip ", flip);
        std::vector<float> out(60);
        apply_augment(src, out.data(), 5, 6, 2, {dy, dx, flip}, pad.data());
        for (int y = 0; y < 5; ++y)
          for (int x = 0; x < 6; ++x)
            for (int c = 0; c < 2; ++c) {
              const int sy = y + dy, sx = (flip ? 5 - x : x) + dx;
              const bool inside = sy >= 0 && sy < 5 && sx >= 0 && sx < 6;
              REQUIRE(out[(y * 6 + x) * 2 + c] == (inside ? src[(sy * 6 + sx) * 2 + c] : pad[c]));
            }
      }
}

TEST_CASE("augmentation changes images, keeps their shape, and only shifts by 2 and flips") {
  const TensorDataset data = small_dataset(23);
  const std::vector<float> pad = data.normalisation().black();
  Loader loader(data, 8, true, true, 5);
  int changed = 0, flipped = 0, total = 0;
  std::set<std::pair<int, int>> shifts;
  for (int64_t b = 0; b < 3 * loader.batches_per_epoch(); ++b) {
    const Batch batch = loader.next();
    CHECK(batch.images.shape() == Shape{static_cast<int64_t>(batch.indices.size()), 5, 6, 2});
    for (size_t i = 0; i < batch.indices.size(); ++i) {
      const float* out = batch.images.data<float>() + i * 60;
      const float* src = image(data, batch.indices[i]);
      Augment a;
      REQUIRE_MESSAGE(find_augment(src, out, pad.data(), a), "sample ", batch.indices[i],
                      " is not a shifted (<= 2) or flipped copy");
      CHECK(batch.labels[i] == data.labels()[batch.indices[i]]);
      changed += std::memcmp(out, src, 60 * sizeof(float)) != 0;
      flipped += a.flip;
      shifts.insert({a.dy, a.dx});
      ++total;
    }
  }
  CHECK(total == 69);
  CHECK(changed >= 60);  // 1 in 50 augmentations is the identity
  CHECK(flipped > 20);   // p = 0.5 of 69
  CHECK(flipped < 49);
  CHECK(shifts.size() >= 15);  // of the 25 possible shifts
}

TEST_CASE("with crop off, augmentation only flips: every image is itself or its mirror") {
  const TensorDataset data = small_dataset(23);
  const std::vector<float> pad = data.normalisation().black();
  Loader loader(data, 8, true, true, 5, /*crop=*/false);
  int flipped = 0, total = 0;
  for (int64_t b = 0; b < 3 * loader.batches_per_epoch(); ++b) {
    const Batch batch = loader.next();
    for (size_t i = 0; i < batch.indices.size(); ++i) {
      Augment a;
      REQUIRE(find_augment(image(data, batch.indices[i]), batch.images.data<float>() + i * 60,
                           pad.data(), a));
      CHECK(a.dy == 0);
      CHECK(a.dx == 0);
      flipped += a.flip;
      ++total;
    }
  }
  CHECK(total == 69);
  CHECK(flipped > 20);  // p = 0.5 of 69
  CHECK(flipped < 49);
}

TEST_CASE("a resumed loader gives the same batches bit for bit, across epoch boundaries") {
  const TensorDataset data = small_dataset(23);  // 5 batches of 5 per epoch, the last one of 3
  for (const int64_t before : {0, 3, 5, 7}) {
    INFO(before, " batches before saving");
    Loader original(data, 5, true, true, 42);
    for (int64_t b = 0; b < before; ++b) original.next();
    const LoaderState saved = original.state();
    std::vector<Batch> expected;
    for (int b = 0; b < 5; ++b) expected.push_back(original.next());

    Loader resumed(data, 5, true, true, 1234);  // another seed: the state carries the seed
    resumed.set_state(saved);
    CHECK(resumed.state() == saved);
    for (int b = 0; b < 5; ++b) {
      INFO("batch ", b, " after resuming");
      const Batch got = resumed.next();
      CHECK(got.indices == expected[b].indices);
      CHECK(got.labels == expected[b].labels);
      CHECK(got.epoch == expected[b].epoch);
      CHECK(got.last_in_epoch == expected[b].last_in_epoch);
      CHECK(same_bits(got.images, expected[b].images));
    }
    CHECK(resumed.state() == original.state());
  }
}

TEST_CASE("set_state rejects a position that cannot belong to the data set") {
  const TensorDataset data = small_dataset(23);
  Loader loader(data, 5, true, true, 1);
  LoaderState bad = loader.state();
  bad.cursor = 23;
  CHECK_THROWS_WITH_AS(loader.set_state(bad),
                       doctest::Contains("saved cursor 23 out of range [0, 23)"), Error);
  bad.cursor = -1;
  CHECK_THROWS_WITH_AS(loader.set_state(bad), doctest::Contains("saved cursor -1"), Error);
  bad = loader.state();
  bad.epoch = -2;
  CHECK_THROWS_WITH_AS(loader.set_state(bad), doctest::Contains("saved epoch -2"), Error);
  bad = loader.state();
  bad.augment_rng = RngState{};
  CHECK_THROWS_WITH_AS(loader.set_state(bad), doctest::Contains("all zeros"), Error);
  // A failed set_state leaves the loader where it was.
  CHECK(loader.state() == Loader(data, 5, true, true, 1).state());
}

TEST_CASE("a loader rejects an empty data set and a non-positive batch size") {
  const TensorDataset data = small_dataset(4);
  CHECK_THROWS_WITH_AS(Loader(data, 0, true, false, 0), doctest::Contains("batch_size 0"), Error);
  const TensorDataset empty(zeros({0, 5, 6, 2}), {}, 3, Normalisation::identity(2), "empty");
  CHECK_THROWS_WITH_AS(Loader(empty, 2, true, false, 0), doctest::Contains("is empty"), Error);
}

TEST_CASE("batches do not depend on the thread count") {
  const TensorDataset data = small_dataset(23);
  const int threads = num_threads();
  set_num_threads(1);
  Loader one(data, 23, true, true, 8);
  const Batch a = one.next();
  set_num_threads(2);
  Loader two(data, 23, true, true, 8);
  const Batch b = two.next();
  set_num_threads(threads);
  CHECK(a.indices == b.indices);
  CHECK(same_bits(a.images, b.images));
}

TEST_CASE("InOrder walks a data set once, in order, without augmentation") {
  const TensorDataset data = small_dataset(23);
  InOrder batches(data, 10);
  CHECK(batches.size() == 3);
  int64_t next = 0, count = 0;
  for (const Batch& batch : batches) {
    ++count;
    CHECK(batch.last_in_epoch == (count == 3));
    for (size_t i = 0; i < batch.indices.size(); ++i, ++next) {
      CHECK(batch.indices[i] == next);
      CHECK(std::memcmp(batch.images.data<float>() + i * 60, image(data, next),
                        60 * sizeof(float)) == 0);
    }
  }
  CHECK(count == 3);
  CHECK(next == 23);
  CHECK_THROWS_AS(batches.batch(3), Error);
  CHECK_THROWS_WITH_AS(batch_in_order(data, 20, 24), doctest::Contains("[20, 24)"), Error);
}
