#include <doctest/doctest.h>

#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::variable;

TEST_CASE("permute and transpose move elements") {
  Tensor a = arange(6).reshape({2, 3});
  Tensor t = transpose(a, 0, 1);
  CHECK(t.shape() == Shape{3, 2});
  CHECK(t.to_vector() == std::vector<double>{0, 3, 1, 4, 2, 5});
  Tensor b = arange(24).reshape({2, 3, 4});
  Tensor p = permute(b, {2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.at({3, 1, 2}) == b.at({1, 2, 3}));
  CHECK_THROWS_WITH_AS(permute(b, {0, 0, 1}), doctest::Contains("twice"), Error);
}

TEST_CASE("slice, select and cat") {
  Tensor a = arange(24).reshape({2, 3, 4});
  Tensor s = slice(a, 1, 1, 3);
  CHECK(s.shape() == Shape{2, 2, 4});
  CHECK(s.at({1, 0, 2}) == a.at({1, 1, 2}));
  Tensor cls = select(a, 1, 0);  // e.g. the cls token of (B, T, C)
  CHECK(cls.shape() == Shape{2, 4});
  CHECK(cls.at({1, 3}) == a.at({1, 0, 3}));
  CHECK(select(a, -1, -1).at({0, 2}) == 11);
  Tensor c = cat({a, s}, 1);
  CHECK(c.shape() == Shape{2, 5, 4});
  CHECK(c.at({1, 4, 0}) == a.at({1, 2, 0}));
  CHECK_THROWS_WITH_AS(slice(a, 1, 2, 5), doctest::Contains("out of bounds"), Error);
  CHECK_THROWS_WITH_AS(cat({a, arange(4)}, 0), doctest::Contains("cat"), Error);
  CHECK_THROWS_AS(select(a, 0, 2), Error);
}

TEST_CASE("broadcast_to copies along new axes") {
  Tensor row = arange(3);
  Tensor b = broadcast_to(row, {2, 3});
  CHECK(b.to_vector() == std::vector<double>{0, 1, 2, 0, 1, 2});
  CHECK_THROWS_AS(broadcast_to(row, {2, 4}), Error);
}

TEST_CASE("shape ops pass gradcheck") {
  Tensor x = variable({2, 3, 4}, 21), y = variable({2, 2, 4}, 22);
  expect_gradients("permute", [](auto& in) { return permute(in[0], {1, 2, 0}); }, {x});
  expect_gradients("transpose", [](auto& in) { return transpose(in[0], -1, 0); }, {x});
  expect_gradients("slice", [](auto& in) { return slice(in[0], 2, 1, 3); }, {x});
  expect_gradients("select", [](auto& in) { return select(in[0], 1, 2); }, {x});
  expect_gradients("cat", [](auto& in) { return cat({in[0], in[1], in[0]}, 1); }, {x, y});
  expect_gradients("broadcast_to", [](auto& in) { return broadcast_to(in[0], {3, 2, 3, 4}); },
                   {x});
}
