// Resuming is exact: N steps, a checkpoint, a fresh process and N more steps give the same
// bits as 2N steps without stopping (weights, optimiser state, generators, losses).
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "tests/tools/cli_helpers.h"

using vg::testing::fresh_dir;
using vg::testing::read_text;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {

std::map<int64_t, double> losses_by_step(const fs::path& metrics) {
  std::map<int64_t, double> out;
  std::istringstream lines(read_text(metrics));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["kind"] == "step") out[j["step"].get<int64_t>()] = j["loss"].get<double>();
  }
  return out;
}

}  // namespace

TEST_CASE("train 2N steps == train N, resume in a fresh process, train N more (bitwise)") {
  const fs::path dir = fresh_dir("resume");
  // Dropout, drop-path, augmentation and gradient accumulation all draw or carry state.
  const std::string recipe =
      "train --data synthetic --synthetic-size 300 --depth 2 --dim 16 --heads 2 --batch 40 "
      "--dropout 0.1 --drop-path 0.2 --layerscale 1e-4 --grn --accum 2 --sched constant "
      "--opt adamw --lr 2e-3 --clip 1 --log-every 1 --seed 7 ";
  auto a = vitgrad(recipe + "--steps 8 --out " + (dir / "a").string());
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  auto b = vitgrad(recipe + "--steps 4 --out " + (dir / "b").string());
  REQUIRE(b.exit_code == 0);
  auto c = vitgrad("train --resume " + (dir / "b" / "last.json").string() + " --steps 8");
  INFO(c.err);
  REQUIRE(c.exit_code == 0);

  const auto ja = nlohmann::json::parse(read_text(dir / "a" / "last.json"));
  const auto jb = nlohmann::json::parse(read_text(dir / "b" / "last.json"));
  CHECK(jb["step"] == 8);
  for (const char* part : {"model", "optimizer", "rng", "data", "scheduler"}) {
    INFO(part);
    CHECK(ja[part] == jb[part]);
  }
  const auto la = losses_by_step(dir / "a" / "metrics.jsonl");
  const auto lb = losses_by_step(dir / "b" / "metrics.jsonl");
  REQUIRE(la.size() == 8);
  REQUIRE(lb.size() == 8);
  for (int64_t s = 1; s <= 8; ++s) CHECK(la.at(s) == lb.at(s));
}
