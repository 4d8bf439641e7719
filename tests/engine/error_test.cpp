#include <doctest/doctest.h>

#include "engine/core/error.h"

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
  CHECK(cat_str("a", [] { return 1.5; }, shape_str({})) == "a1.5[]");
}
