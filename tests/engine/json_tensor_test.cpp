#include "engine/io/json_tensor.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "tests/engine/bits_helpers.h"

using namespace vg;
using vg::testing::same_bits;
using nlohmann::json;

namespace {

// Writes, prints, parses and reads back: the full path a checkpoint takes.
Tensor through_text(const Tensor& t) {
  return tensor_from_json(json::parse(tensor_to_json(t).dump()), "test tensor");
}

}  // namespace

TEST_CASE("float32 values survive JSON text bit for bit") {
  std::vector<float> values;
  Rng rng(7);
  for (int i = 0; i < 20000; ++i) {  // random bit patterns: every exponent, every mantissa
    const uint32_t bits = static_cast<uint32_t>(rng.next_u64());
    const float f = std::bit_cast<float>(bits);
    if (std::isfinite(f)) values.push_back(f);
  }
  for (int i = 0; i < 2000; ++i) values.push_back(static_cast<float>(rng.normal()));
  const float special[] = {0.0f,
                           -0.0f,
                           1e-45f,
                           -1e-45f,
                           1.17549435e-38f,
                           1.1754942e-38f,
                           3.4e38f,
                           std::numeric_limits<float>::max(),
                           -std::numeric_limits<float>::max(),
                           0.1f,
                           1.0f / 3,
                           16777217.0f};
  values.insert(values.end(), std::begin(special), std::end(special));
  const Tensor t = from_vector(values, {static_cast<int64_t>(values.size())});
  const Tensor back = through_text(t);
  REQUIRE(back.dtype() == DType::f32);
  const float* a = t.data<float>();
  const float* b = back.data<float>();
  int64_t mismatches = 0, first = -1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) {
      if (mismatches++ == 0) first = i;
    }
  }
  INFO(mismatches, " of ", t.numel(), " values changed; first at index ", first);
  CHECK(mismatches == 0);
  CHECK(std::signbit(b[t.numel() - std::size(special) + 1]));  // -0.0 keeps its sign
}

TEST_CASE("float64 values and shapes round-trip, including empty and 0-d tensors") {
  Rng rng(3);
  const Tensor t = randn({3, 1, 4}, rng, DType::f64);
  CHECK(same_bits(through_text(t), t));
  const Tensor empty = zeros({2, 0, 3});
  const Tensor e = through_text(empty);
  CHECK(e.shape() == Shape{2, 0, 3});
  const Tensor scalar = full({}, 2.5, DType::f64);
  CHECK(through_text(scalar).shape() == Shape{});
  CHECK(through_text(scalar).item() == 2.5);
  CHECK(tensor_to_json(t)["dtype"] == "float64");
  CHECK(tensor_to_json(t)["shape"] == json::array({3, 1, 4}));
}

TEST_CASE("tensor_to_json refuses NaN and Inf and names the tensor") {
  Tensor t = zeros({2, 2});
  t.set_at({1, 0}, std::nan(""));
  CHECK_THROWS_WITH_AS(tensor_to_json(t, "model 'head.weight'"),
                       doctest::Contains("model 'head.weight'"), Error);
  CHECK_THROWS_WITH_AS(tensor_to_json(t, "x"), doctest::Contains("flat index 2"), Error);
  t.set_at({1, 0}, INFINITY);
  t.set_name("blocks.0.ls1.gamma");
  CHECK_THROWS_WITH_AS(tensor_to_json(t), doctest::Contains("blocks.0.ls1.gamma"), Error);
}

TEST_CASE("tensor_from_json names the entry for every malformed field") {
  const json good = tensor_to_json(ones({2, 2}));
  const auto fails = [&](json j, const char* expected) {
    INFO("input: ", j.dump(), ", expected message containing: ", expected);
    CHECK_THROWS_WITH_AS(tensor_from_json(j, "model 'w'"), doctest::Contains(expected), Error);
    CHECK_THROWS_WITH_AS(tensor_from_json(j, "model 'w'"), doctest::Contains("model 'w'"), Error);
  };
  fails(json::array(), "expected an object");
  json j = good;
  j["shape"] = {2, -2};
  fails(j, "non-negative integers");
  j["shape"] = {2.0, 2};
  fails(j, "non-negative integers");
  j["shape"] = "2x2";
  fails(j, "shape must be an array");
  j = good;
  j["dtype"] = "float16";
  fails(j, "dtype must be");
  j = good;
  j["data"] = {1, 2, 3};
  fails(j, "data has 3 values, shape [2,2] needs 4");
  j = good;
  j["data"][2] = "1.0";
  fails(j, "data[2] is not a number");
  j["data"][2] = nullptr;
  fails(j, "data[2] is not a number");
  j["data"][2] = true;
  fails(j, "data[2] is not a number");
  j["data"][2] = 1e39;  // beyond float32
  fails(j, "not a finite float32");
  j = good;
  j.erase("dtype");
  fails(j, "missing key 'dtype'");
  j = good;
  j["name"] = "w";
  fails(j, "unknown key 'name'");
  // integers are numbers too
  j = good;
  j["data"] = {1, 2, 3, 4};
  CHECK(tensor_from_json(j, "w").to_vector() == std::vector<double>{1, 2, 3, 4});
}

TEST_CASE("rng state round-trips through JSON and the generator continues identically") {
  Rng rng(42);
  rng.normal();  // leaves a spare normal cached
  REQUIRE(rng.state().has_spare_normal);
  const json j = json::parse(rng_to_json(rng.state()).dump());
  CHECK(j["s"][0].get<std::string>().size() == 16);
  Rng copy(0);
  copy.set_state(rng_from_json(j, "rng"));
  CHECK(copy.state() == rng.state());
  for (int i = 0; i < 5; ++i) {
    CHECK(copy.normal() == rng.normal());
    CHECK(copy.next_u64() == rng.next_u64());
  }
}

TEST_CASE("rng_from_json rejects malformed states") {
  const json good = rng_to_json(Rng(1).state());
  const auto fails = [&](json j, const char* expected) {
    INFO("input: ", j.dump());
    CHECK_THROWS_WITH_AS(rng_from_json(j, "checkpoint rng"), doctest::Contains(expected), Error);
  };
  json j = good;
  j["s"][1] = "123";
  fails(j, "16 hex digits");
  j["s"][1] = "zzzzzzzzzzzzzzzz";
  fails(j, "not hex");
  j["s"] = {"0000000000000000", "0000000000000000", "0000000000000000", "0000000000000000"};
  fails(j, "all zero");
  j = good;
  j["s"].erase(3);
  fails(j, "array of 4");
  j = good;
  j["has_spare_normal"] = 1;
  fails(j, "has_spare_normal");
  j = good;
  j["spare_normal"] = 0.5;
  fails(j, "spare_normal");
  j = good;
  j["extra"] = 1;
  fails(j, "unknown key 'extra'");
}
