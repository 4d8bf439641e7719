// `vitgrad bench --products`: every linear layer of a block, its three products at the step's
// shapes, each on vitgrad's products and on OpenBLAS's, with results that agree as the
// precision says (never a timing threshold).
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "tests/tools/cli_helpers.h"

using vg::testing::vitgrad;

namespace {

// 8 images of 28 x 28 in patches of 4: 49 patches and the class token, 400 rows.
const std::string kProducts =
    "bench --depth 2 --dim 16 --heads 2 --mlp-ratio 4 --batch 8 --steps 1 --warmup 0 "
    "--threads 2 --products ";

nlohmann::json products_of(const std::string& extra, const std::string& env = "") {
  const auto r = vitgrad(kProducts + "--json " + extra, env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out).at("products");
}

using Shape = std::tuple<int64_t, int64_t, int64_t>;

}  // namespace

TEST_CASE("bench --products: each linear's forward, input and weight gradient at its shape") {
  const nlohmann::json products = products_of("");
  // W (out, in): forward rows x out x in, input gradient rows x in x out, weight gradient
  // out x in x rows.
  const std::map<std::string, Shape> expected = {
      {"attn.qkv forward", {400, 48, 16}},         {"attn.qkv input gradient", {400, 16, 48}},
      {"attn.qkv weight gradient", {48, 16, 400}}, {"attn.proj forward", {400, 16, 16}},
      {"attn.proj input gradient", {400, 16, 16}}, {"attn.proj weight gradient", {16, 16, 400}},
      {"mlp.fc1 forward", {400, 64, 16}},          {"mlp.fc1 input gradient", {400, 16, 64}},
      {"mlp.fc1 weight gradient", {64, 16, 400}},  {"mlp.fc2 forward", {400, 16, 64}},
      {"mlp.fc2 input gradient", {400, 64, 16}},   {"mlp.fc2 weight gradient", {16, 64, 400}}};
  REQUIRE(products.size() == expected.size());
  for (const nlohmann::json& p : products) {
    const std::string name =
        p.at("layer").get<std::string>() + " " + p.at("kind").get<std::string>();
    INFO(name);
    REQUIRE(expected.count(name) == 1);
    CHECK(Shape{p.at("m"), p.at("n"), p.at("k")} == expected.at(name));
    CHECK(p.at("vitgrad_ms").get<double>() > 0);
    CHECK(p.at("openblas_ms").get<double>() > 0);
    // fp32 on both sides: the same sums in another order.
    CHECK(p.at("relative_difference").get<double>() < 1e-5);
  }
}

TEST_CASE("bench --products --amp bf16 times the bf16 products, which round their operands") {
  // Float fmas on operands rounded to bf16 run on any CPU and round as the bf16 units do.
  const nlohmann::json products = products_of("--amp bf16", "VITGRAD_BF16_UNITS=fma");
  REQUIRE(products.size() == 12);
  for (const nlohmann::json& p : products) {
    INFO(p.dump());
    // Each operand rounded to 8 significant bits: errors of about 2^-8 of a term, far more
    // than float's, and within a few times that of the largest value over sums of <= 400
    // random terms.
    const double difference = p.at("relative_difference").get<double>();
    CHECK(difference > 1e-5);
    CHECK(difference < 0.05);
  }
}

TEST_CASE("bench --products prints its table after the report; without it, no products") {
  const auto r = vitgrad(kProducts);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("products of block 0") != std::string::npos);
  CHECK(r.out.find("mlp.fc2 weight gradient") != std::string::npos);
  CHECK(r.out.find("OpenBLAS's sgemm") != std::string::npos);
  CHECK(r.out.find("OpenBLAS's products do neither") != std::string::npos);  // not like for like
  const auto plain = vitgrad("bench --depth 2 --dim 16 --heads 2 --batch 8 --steps 1 --json");
  REQUIRE(plain.exit_code == 0);
  CHECK(!nlohmann::json::parse(plain.out).contains("products"));
}
