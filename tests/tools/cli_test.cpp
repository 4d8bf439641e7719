// The command line as a user meets it, on the synthetic data: train -> eval -> resume ->
// summary -> plot -> graph, and every misuse answered with one line and exit code 2.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_helpers.h"

using vg::testing::fresh_dir;
using vg::testing::read_text;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {
// A model and data small enough for a test: depth 2, dim 16, 500 synthetic images.
const std::string kTiny = "--data synthetic --depth 2 --dim 16 --heads 2 --batch 50 --threads 2 ";
}  // namespace

TEST_CASE("train, eval, resume, summary, plot and graph work end to end") {
  const fs::path dir = fresh_dir("cli_flow");
  const std::string run = (dir / "run").string();
  auto r = vitgrad("train " + kTiny + "--steps 12 --log-every 4 --layerscale 1e-4 --grn --out " + run);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("test accuracy: ") != std::string::npos);
  for (const char* f : {"config.json", "metrics.jsonl", "last.json", "best.json"})
    CHECK(fs::exists(fs::path(run) / f));
  // metrics.jsonl: three step records and one epoch record, with LayerScale and GRN gammas.
  std::istringstream lines(read_text(fs::path(run) / "metrics.jsonl"));
  int steps = 0, epochs = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["kind"] == "step") {
      ++steps;
      CHECK(j.contains("loss"));
      CHECK(j["layerscale"].contains("blocks.1.ls2"));
      CHECK(j["grn"].contains("blocks.0.mlp.grn"));
    } else {
      ++epochs;
      CHECK(j["test_accuracy"].get<double>() >= 0);
    }
  }
  CHECK(steps == 3);
  CHECK(epochs == 1);

  r = vitgrad("eval " + run + "/last.json --json");
  REQUIRE(r.exit_code == 0);
  const auto eval = nlohmann::json::parse(r.out);
  CHECK(eval["count"] == 500);
  CHECK(eval["accuracy"].get<double>() >= 0);

  r = vitgrad("train --resume " + run + "/last.json --steps 16");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("resuming") != std::string::npos);

  r = vitgrad("summary --depth 2 --grn --layerscale auto --json");
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["total_parameters"].get<int64_t>() > 0);
  CHECK(summary["layers"].size() > 5);

  r = vitgrad("plot " + run + "/metrics.jsonl --what loss -o " + (dir / "loss.svg").string());
  CHECK(r.exit_code == 0);
  CHECK(read_text(dir / "loss.svg").rfind("<svg", 0) == 0);
  r = vitgrad("plot " + run + "/metrics.jsonl --what layerscale -o " + (dir / "ls.svg").string());
  CHECK(r.exit_code == 0);

  r = vitgrad("graph --depth 1 --dim 16 --heads 2 -o " + (dir / "g.dot").string());
  CHECK(r.exit_code == 0);
  const std::string dot = read_text(dir / "g.dot");
  CHECK(dot.find("blocks.0.attn") != std::string::npos);
}

TEST_CASE("every misuse is one line on stderr and exit code 2") {
  const fs::path dir = fresh_dir("cli_misuse");
  const std::string ck = (dir / "bad.json").string();
  std::ofstream(ck) << "{\"format\": \"vitgrad-checkpoint\", \"version\": 9}";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"frobnicate", "unknown command 'frobnicate'"},
      {"train --bogus", "unknown flag --bogus"},
      {"train --lr", "--lr needs a value"},
      {"train --lr abc", "--lr expects a number, got 'abc'"},
      {"train --batch 0", "--batch must be between 1"},
      {"train --dim 30 --heads 4", "embed_dim 30 is not divisible by num_heads 4"},
      {"train --patch 5", "img_size 28 is not divisible by patch_size 5"},
      {"train --preset nope", "unknown preset 'nope'"},
      {"train --opt adam", "--opt must be one of sgd|adamw|lamb"},
      {"train --epochs 2 --steps 3", "give --epochs or --steps, not both"},
      {"train --resume " + ck + " --lr 0.1", "--lr cannot be changed when resuming"},
      {"train --resume " + ck, "version 9 is not supported"},
      {"train --resume /nonexistent/last.json", "cannot open"},
      {"train --data-dir /nonexistent --steps 1", "/nonexistent"},
      {"train --config /nonexistent.json", "cannot read config file"},
      {"eval", "expected 1 positional argument"},
      {"eval /nonexistent.json", "cannot open"},
      {"summary --norm batchnorm", "--norm must be one of layernorm|learnable_scaler"},
      {"summary --layerscale maybe", "'layerscale' must be none, auto or a positive number"},
      {"graph --depth 1", "-o OUT.dot is required"},
      {"plot /nonexistent/metrics.jsonl -o x.svg", "/nonexistent/metrics.jsonl"},
      {"gradcheck --only nope", "unknown check 'nope'"},
      {"gradcheck extra", "unexpected argument 'extra'"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = vitgrad(args);
    INFO("vitgrad ", args, "\nstderr: ", r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.empty());
  }
}

TEST_CASE("every command answers --help") {
  for (const char* command : {"train", "eval", "summary", "plot", "graph", "bench", "gradcheck"}) {
    const auto r = vitgrad(std::string(command) + " --help");
    INFO(command);
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("usage: vitgrad ", 0) == 0);
  }
}
