// `vitgrad gradcheck` as a user meets it: the table, the JSON lines, --only and --rtol.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "models/gradcheck_suite.h"
#include "tests/tools/cli_helpers.h"

using vg::testing::vitgrad;

TEST_CASE("gradcheck --only FAMILY --json prints one passing object per case of the family") {
  const auto r = vitgrad("gradcheck --only LayerScale --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::istringstream lines(r.out);
  std::vector<std::string> names;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    CHECK(j.size() == 4);
    names.push_back(j.at("name"));
    CHECK(j.at("passed") == true);
    CHECK(j.at("max_abs_err").get<double>() >= 0);
    CHECK(j.at("max_rel_err").get<double>() < 1e-6);
  }
  CHECK(names == std::vector<std::string>{"LayerScale", "LayerScale:images"});
}

TEST_CASE("gradcheck prints a table with every case and a passed/failed count") {
  const auto r = vitgrad("gradcheck --only mul");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("name", 0) == 0);
  for (const char* name : {"\nmul ", "\nmul:row ", "\nmul:both ", "\nmul:scalar "})
    CHECK(r.out.find(name) != std::string::npos);
  CHECK(r.out.find("7 passed, 0 failed") != std::string::npos);
  // --only takes one exact case too.
  const auto one = vitgrad("gradcheck --only Block:grn --json");
  REQUIRE(one.exit_code == 0);
  CHECK(nlohmann::json::parse(one.out).at("name") == "Block:grn");
}

TEST_CASE("the command runs the same list as the library (no check is left out)") {
  const auto r = vitgrad("gradcheck --only nope");
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("vitgrad gradcheck: unknown check 'nope'; known: add add:row", 0) == 0);
  for (const vg::GradcheckCase& c : vg::gradcheck_cases())
    CHECK(r.err.find(" " + c.name) != std::string::npos);
}

TEST_CASE("gradcheck --rtol replaces the bounds: a check above it fails and the exit code is 1") {
  // No float64 gradient is exact, so a bound of 1e-300 fails every check...
  const auto strict = vitgrad("gradcheck --only LayerScale --rtol 1e-300");
  CHECK(strict.exit_code == 1);
  CHECK(strict.out.find("FAILED") != std::string::npos);
  CHECK(strict.out.find("0 passed, 2 failed") != std::string::npos);
  // ...a loose one passes them, and the JSON lines say which.
  const auto loose = vitgrad("gradcheck --only LayerScale --rtol 1e-3 --json");
  CHECK(loose.exit_code == 0);
  CHECK(loose.out.find("\"passed\":true") != std::string::npos);
  const auto bad = vitgrad("gradcheck --rtol -1");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--rtol") != std::string::npos);
}
