#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "engine/ops/ops.h"

using namespace vg;

TEST_CASE("factories fill shape and values") {
  Tensor z = zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.numel() == 6);
  CHECK(z.dtype() == DType::f32);
  CHECK(z.at({1, 2}) == 0.0);
  CHECK(ones({4}, DType::f64).at({3}) == 1.0);
  CHECK(full({2, 2}, 2.5).at({1, 0}) == 2.5);
  CHECK(arange(5).to_vector() == std::vector<double>{0, 1, 2, 3, 4});
  CHECK(arange(1.0, 2.0, 0.25).to_vector() == std::vector<double>{1, 1.25, 1.5, 1.75});
  Tensor v = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(v.at({1, 0}) == 4.0);
  CHECK_THROWS_AS(from_vector(std::vector<float>{1, 2, 3}, {2, 2}), Error);
}

TEST_CASE("storage is 64-byte aligned") {
  for (int64_t n : {1, 3, 17, 1000}) {
    Tensor t = Tensor::empty({n});
    CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0);
  }
}

TEST_CASE("reshape shares storage and infers -1") {
  Tensor a = arange(12);
  Tensor b = a.reshape({3, -1});
  CHECK(b.shape() == Shape{3, 4});
  CHECK(b.raw_data() == a.raw_data());
  b.set_at({2, 3}, 100);
  CHECK(a.at({11}) == 100);
  CHECK_THROWS_WITH_AS(a.reshape({5, -1}), doctest::Contains("reshape"), Error);
  CHECK_THROWS_AS(a.reshape({-1, -1}), Error);
}

TEST_CASE("to converts dtype and item reads one element") {
  Tensor a = from_vector(std::vector<double>{0.1}, {1});
  CHECK(a.to(DType::f32).dtype() == DType::f32);
  CHECK(a.to(DType::f32).item() == doctest::Approx(0.1).epsilon(1e-7));
  CHECK(a.item() == 0.1);
  CHECK_THROWS_WITH_AS(zeros({2}).item(), doctest::Contains("[2]"), Error);
  CHECK_THROWS_AS(zeros({2}).data<double>(), Error);
}

TEST_CASE("printing shows shape, dtype and values") {
  Tensor t = arange(3).set_name("x");
  CHECK(t.str() == "tensor([3], float32, 'x') [0, 1, 2]");
  CHECK(arange(20).str(2) == "tensor([20], float32) [0, 1, ...]");
}

TEST_CASE("rng is reproducible and its state restores the stream") {
  Rng a(42), b(42);
  CHECK(a.next_u64() == b.next_u64());
  a.normal();  // leaves a spare normal in the state
  RngState saved = a.state();
  const double n1 = a.normal(), n2 = a.normal(), u = a.uniform();
  Rng c(7);
  c.set_state(saved);
  CHECK(c.normal() == n1);
  CHECK(c.normal() == n2);
  CHECK(c.uniform() == u);
}

TEST_CASE("randn has mean 0 and std 1, rand lies in [0, 1)") {
  Rng rng(1);
  Tensor x = randn({20000}, rng, DType::f64);
  CHECK(mean(x).item() == doctest::Approx(0.0).epsilon(0.03));
  CHECK(std::sqrt(var(x).item()) == doctest::Approx(1.0).epsilon(0.03));
  Tensor u = rand({1000}, rng);
  CHECK(max(u).item() < 1.0);
  CHECK(-max(neg(u)).item() >= 0.0);
}

TEST_CASE("trunc_normal keeps values inside absolute bounds") {
  Rng rng(3);
  Tensor x = trunc_normal({5000}, rng, 0.0, 1.0, -0.5, 0.5, DType::f64);
  for (double v : x.to_vector()) REQUIRE(std::abs(v) <= 0.5);
  Tensor w = trunc_normal({5000}, rng, 0.0, 0.02, -2.0, 2.0, DType::f64);
  CHECK(std::sqrt(var(w).item()) == doctest::Approx(0.02).epsilon(0.05));
  CHECK_THROWS_AS(trunc_normal({2}, rng, 0.0, 1.0, 8.0, 9.0), Error);
}
