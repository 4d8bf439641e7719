#include "engine/core/error.h"

#include <doctest/doctest.h>

using namespace vg;

TEST_CASE("check makes a function part of its message only when the check fails") {
  int calls = 0;
  auto shape = [&] {
    ++calls;
    return shape_str({2, 3});
  };
  check(true, "never made: ", shape);
  CHECK(calls == 0);
  CHECK_THROWS_WITH_AS(check(false, "shape ", shape, " and ", 7, '.'), "shape [2,3] and 7.", Error);
  CHECK(calls == 1);
  CHECK(cat_str(
            "a", [] { return 1.5; }, shape_str({})) == "a1.5[]");
  // A shape is a part of its own, printed as shape_str prints it, so checks pass it unformatted.
  const std::vector<int64_t> shape_part{2, 196, 768};
  CHECK(cat_str("x ", shape_part, [] { return std::vector<int64_t>{}; }) == "x [2,196,768][]");
}
