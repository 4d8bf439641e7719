// Gradient accumulation in the training loop: k micro-batches of b images make the same
// steps as batches of k*b images, including the shorter last step of an epoch, and a step
// never runs into the next epoch.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/io/checkpoint.h"
#include "tests/tools/cli_helpers.h"

using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {

// 100 images in batches of 8: 13 batches an epoch, the last of 4 images. With 3 micro-batches
// a step, an epoch is 5 steps: four of 24 images and one of 4.
const std::string kRun =
    "train --data synthetic --synthetic-size 100 --depth 1 --dim 16 --heads 2 --epochs 2 "
    "--no-augment --opt sgd --lr 0.05 --momentum 0.9 --threads 1 --log-every 1 --seed 4 ";

std::vector<nlohmann::json> records(const fs::path& dir, const char* kind) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(read_text(dir / "metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("kind", "") == kind) out.push_back(j);
  }
  return out;
}

}  // namespace

TEST_CASE("accumulated micro-batches train as one big batch, epoch by epoch") {
  const fs::path dir = scratch_dir("accumulation");
  const auto small = vitgrad(kRun + "--batch 8 --accum 3 --out " + (dir / "accum").string());
  INFO(small.err);
  REQUIRE(small.exit_code == 0);
  const auto big = vitgrad(kRun + "--batch 24 --out " + (dir / "big").string());
  INFO(big.err);
  REQUIRE(big.exit_code == 0);

  // Two epochs of 5 steps each: the epoch records sit at steps 5 and 10, numbered 1 and 2.
  const auto epochs = records(dir / "accum", "epoch");
  REQUIRE(epochs.size() == 2);
  CHECK(epochs[0].at("step") == 5);
  CHECK(epochs[0].at("epoch") == 1);
  CHECK(epochs[1].at("step") == 10);
  CHECK(epochs[1].at("epoch") == 2);

  // Step for step the same losses, and the same weights at the end (float32: only the order
  // of the sums differs).
  const auto steps_small = records(dir / "accum", "step"), steps_big = records(dir / "big", "step");
  REQUIRE(steps_small.size() == 10);
  REQUIRE(steps_big.size() == 10);
  for (size_t i = 0; i < 10; ++i) {
    CAPTURE(i);
    CHECK(steps_small[i].at("loss").get<double>() ==
          doctest::Approx(steps_big[i].at("loss").get<double>()).epsilon(1e-5));
  }
  const vg::Checkpoint a = vg::load_checkpoint((dir / "accum" / "last.json").string());
  const vg::Checkpoint b = vg::load_checkpoint((dir / "big" / "last.json").string());
  REQUIRE(a.model.size() == b.model.size());
  double worst = 0;
  for (const auto& [name, t] : a.model) {
    const std::vector<double> x = t.to_vector(), y = b.model.at(name).to_vector();
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  }
  CHECK(worst < 1e-5);
}
