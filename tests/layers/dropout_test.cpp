#include "layers/dropout.h"

#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::Dropout;
using vg::nn::DropPath;
using vg::testing::expect_gradients_at_step;
using vg::testing::variable;

TEST_CASE("Dropout zeroes elements with probability p and scales the rest by 1/(1-p)") {
  auto rng = std::make_shared<Rng>(1);
  Dropout drop(0.25, rng);
  const Tensor x = ones({100, 100});
  const std::vector<double> y = drop(x).to_vector();
  int64_t zeros_seen = 0;
  for (double v : y) {
    CHECK((v == 0 || v == doctest::Approx(1 / 0.75).epsilon(1e-7)));
    zeros_seen += v == 0;
  }
  // 10000 draws: the dropped fraction is 0.25 +- 0.0043 (one standard error).
  CHECK(std::fabs(double(zeros_seen) / 1e4 - 0.25) < 0.02);
  CHECK(drop.named_parameters().empty());
}

TEST_CASE("Dropout is the identity in eval mode and at p = 0") {
  auto rng = std::make_shared<Rng>(1);
  Dropout drop(0.5, rng);
  const Tensor x = variable({4, 5}, 1);
  drop.eval();
  CHECK(drop(x).to_vector() == x.to_vector());
  {
    FlopCounter flops;
    drop(x);
    CHECK(flops.total() == 0);
  }
  drop.train();
  {
    FlopCounter flops;  // one multiply per element when active
    drop(x);
    CHECK(flops.total() == 20);
  }
  Dropout none(0.0, nullptr);
  CHECK(none(x).to_vector() == x.to_vector());
}

TEST_CASE("Dropout passes gradcheck with the same mask in every call") {
  auto rng = std::make_shared<Rng>(3);
  Dropout drop(0.3, rng);
  const RngState state = rng->state();
  // Each call restarts the generator, so the finite differences see one fixed mask.
  expect_gradients_at_step("Dropout",
                           [&](auto& in) {
                             rng->set_state(state);
                             return drop(in[0]);
                           },
                           {variable({3, 4, 5}, 2)});
}

TEST_CASE("Dropout rejects p outside [0, 1) and a missing generator") {
  CHECK_THROWS_WITH_AS(Dropout(1.0, std::make_shared<Rng>(1)),
                       doctest::Contains("p must be in [0, 1)"), Error);
  CHECK_THROWS_AS(Dropout(-0.1, std::make_shared<Rng>(1)), Error);
  CHECK_THROWS_WITH_AS(Dropout(0.1, nullptr), doctest::Contains("needs a random generator"), Error);
}

TEST_CASE("DropPath draws once per sample: a sample is all zero or all x / keep") {
  auto rng = std::make_shared<Rng>(5);
  DropPath drop_path(0.25, rng);
  const Tensor x = ones({2000, 3, 4});
  const RngState before = rng->state();
  const Tensor y = drop_path(x);
  // The mask follows the generator: sample b is kept iff its draw is below keep = 0.75.
  Rng replay(5);
  replay.set_state(before);
  int64_t dropped = 0;
  for (int64_t b = 0; b < 2000; ++b) {
    const std::vector<double> sample = select(y, 0, b).to_vector();
    const bool kept = replay.uniform() < 0.75;
    const double expected = kept ? double(float(1 / 0.75)) : 0.0;
    bool uniform_sample = true;
    for (double v : sample) uniform_sample = uniform_sample && v == expected;
    CHECK(uniform_sample);
    dropped += !kept;
  }
  // 2000 samples: the dropped fraction is 0.25 +- 0.0097 (one standard error).
  CHECK(std::fabs(double(dropped) / 2000 - 0.25) < 0.04);
  CHECK(rng->state() == replay.state());  // exactly one draw per sample
}

TEST_CASE("DropPath is the identity in eval mode and at drop_prob 0") {
  auto rng = std::make_shared<Rng>(1);
  DropPath drop_path(0.5, rng);
  const Tensor x = variable({4, 5, 2}, 1);
  drop_path.eval();
  const RngState before = rng->state();
  CHECK(drop_path(x).to_vector() == x.to_vector());
  CHECK(rng->state() == before);  // no draws when inactive
  {
    FlopCounter flops;
    drop_path(x);
    CHECK(flops.total() == 0);
  }
  drop_path.train();
  {
    FlopCounter flops;  // one multiply per element when active
    drop_path(x);
    CHECK(flops.total() == 40);
  }
  DropPath none(0.0, nullptr);
  CHECK(none(x).to_vector() == x.to_vector());
}

TEST_CASE("DropPath passes gradcheck with the same mask in every call, on 2- to 4-D inputs") {
  auto rng = std::make_shared<Rng>(7);
  DropPath drop_path(0.5, rng);
  const RngState state = rng->state();
  for (const Shape& shape : {Shape{6, 3}, Shape{6, 2, 3}, Shape{6, 2, 2, 3}}) {
    INFO("input shape ", shape_str(shape));
    expect_gradients_at_step("DropPath",
                             [&](auto& in) {
                               rng->set_state(state);
                               return drop_path(in[0]);
                             },
                             {variable(shape, 8)});
  }
}

TEST_CASE("DropPath rejects drop_prob outside [0, 1), a missing generator, a scalar input") {
  CHECK_THROWS_WITH_AS(DropPath(1.0, std::make_shared<Rng>(1)),
                       "DropPath(drop_prob=1): drop_prob must be in [0, 1)", Error);
  CHECK_THROWS_AS(DropPath(0.1, nullptr), Error);
  DropPath drop_path(0.1, std::make_shared<Rng>(1));
  CHECK_THROWS_WITH_AS(drop_path(full({}, 1.0)),
                       "DropPath(drop_prob=0.1): input must have a batch axis, got shape []",
                       Error);
}
