// --config FILE: a run's config.json carries the whole recipe (model and training options),
// so that a run can be repeated from it; flags override it; a mistyped key is an error.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_helpers.h"

using nlohmann::json;
using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {

// The loss of every logged step of a run, in order.
std::vector<double> step_losses(const fs::path& run) {
  std::vector<double> losses;
  std::istringstream lines(read_text(run / "metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const json j = json::parse(line);
    if (j["kind"] == "step") losses.push_back(j["loss"]);
  }
  return losses;
}

json read_json(const fs::path& path) { return json::parse(read_text(path)); }

}  // namespace

TEST_CASE("train --config with a run's config.json repeats that run bit for bit") {
  const fs::path dir = scratch_dir("config_repeat");
  // A recipe far from the defaults in every part the train section holds.
  auto r = vitgrad(
      "train --data synthetic --synthetic-size 400 --depth 2 --dim 16 --heads 2 --batch 40 "
      "--threads 1 --steps 6 --log-every 2 --opt adamw --lr 3e-3 --wd 0.1 --warmup 2 "
      "--min-lr 1e-4 --label-smoothing 0.1 --clip 1 --accum 2 --no-crop --seed 5 --out " +
      (dir / "x").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = vitgrad("train --config " + (dir / "x" / "config.json").string() + " --threads 1 --out " +
              (dir / "y").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(read_json(dir / "y" / "config.json") == read_json(dir / "x" / "config.json"));
  const std::vector<double> losses = step_losses(dir / "x");
  CHECK(losses.size() == 3);
  CHECK(step_losses(dir / "y") == losses);  // exact doubles
  // Weights, optimiser moments, schedule, generators and loader: all the same bits.
  CHECK(read_json(dir / "y" / "last.json") == read_json(dir / "x" / "last.json"));
  const auto eval_x = vitgrad("eval " + (dir / "x" / "last.json").string() + " --json");
  const auto eval_y = vitgrad("eval " + (dir / "y" / "last.json").string() + " --json");
  REQUIRE(eval_x.exit_code == 0);
  CHECK(eval_y.out == eval_x.out);
}

TEST_CASE("flags override a --config file's model and recipe one by one") {
  const fs::path dir = scratch_dir("config_override");
  const fs::path file = dir / "config.json";
  std::ofstream(file) << json{{"model", {{"depth", 2}, {"embed_dim", 16}, {"num_heads", 2}}},
                              {"train",
                               {{"data", "synthetic"},
                                {"steps", 40},
                                {"lr", 0.003},
                                {"label_smoothing", 0.1},
                                {"crop", false},
                                {"seed", "5"}}}}
                             .dump();
  const auto r = vitgrad("train --config " + file.string() +
                         " --threads 1 --depth 1 --lr 1e-3 --steps 2 --out " +
                         (dir / "z").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json config = read_json(dir / "z" / "config.json");
  CHECK(config["model"]["depth"] == 1);       // flag
  CHECK(config["model"]["embed_dim"] == 16);  // file
  CHECK(config["train"]["lr"] == 1e-3);       // flag
  CHECK(config["train"]["steps"] == 2);       // flag
  CHECK(config["train"]["label_smoothing"] == 0.1);  // file
  CHECK(config["train"]["crop"] == false);           // file
  CHECK(config["train"]["seed"] == "5");             // file
  CHECK(config["train"]["wd"] == 0.05);              // neither: the default
}

TEST_CASE("a plain ViTConfig file gives the model and leaves the default recipe") {
  const fs::path dir = scratch_dir("config_plain");
  const fs::path file = dir / "vit.json";
  std::ofstream(file) << R"({"depth": 2, "embed_dim": 16, "num_heads": 2})";
  const auto r = vitgrad("train --config " + file.string() +
                         " --data synthetic --steps 1 --threads 1 --out " + (dir / "p").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json config = read_json(dir / "p" / "config.json");
  CHECK(config["model"]["depth"] == 2);
  CHECK(config["train"]["lr"] == 1e-3);
  CHECK(config["train"]["label_smoothing"] == 0.0);
}

TEST_CASE("an unknown section or key in a --config file names the file, section and key") {
  const fs::path dir = scratch_dir("config_keys");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"model": {}, "train": {"lr_min": 0.1}})",
       "unknown key 'lr_min' in section 'train' (did you mean 'min_lr'?)"},
      {R"({"model": {}, "train": {"label_smooting": 0.1}})",
       "unknown key 'label_smooting' in section 'train' (did you mean 'label_smoothing'?)"},
      {R"({"model": {"depht": 2}, "train": {}})",
       "unknown key 'depht' in section 'model' (did you mean 'depth'?)"},
      {R"({"train": {"bogus": 1}})", "unknown key 'bogus' in section 'train'"},
      {R"({"modle": {}, "train": {}})",
       "unknown section 'modle' (did you mean 'model'?); a run's config.json has 'model' and "
       "'train'"},
      {R"({"depht": 2})", "unknown key 'depht' in the ViTConfig (did you mean 'depth'?)"},
      {R"({"model": {}, "train": [1]})", "section 'train' must be a JSON object, got array"},
      {R"({"model": {}, "train": {"lr": "high"}})",
       "section 'train': training options: 'lr' has the wrong type (\"high\")"},
      {R"({"model": {}, "train": {"batch": 0}})",
       "section 'train': --batch must be between 1 and 65536, got 0"},
      {R"({"model": {"embed_dim": "wide"}, "train": {}})",
       "section 'model': ViTConfig: 'embed_dim' must be an integer"},
  };
  int n = 0;
  for (const auto& [text, message] : cases) {
    const fs::path file = dir / ("case" + std::to_string(n++) + ".json");
    std::ofstream(file) << text;
    // train reads both sections; summary reads the model, yet checks the whole file.
    const std::string train = "train --data synthetic --steps 1 --threads 1 --out " +
                              (dir / "out").string();
    for (const std::string& command : {train, std::string("summary")}) {
      if (command == "summary" && message.find("section 'train':") != std::string::npos) continue;
      const auto r = vitgrad(command + " --config " + file.string());
      INFO(command, " --config ", text, "\nstderr: ", r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find(file.string() + ": ") != std::string::npos);
      CHECK(r.err.find(message) != std::string::npos);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      CHECK_FALSE(fs::exists(dir / "out"));
    }
  }
}
