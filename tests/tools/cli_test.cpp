// The command line as a user meets it, on the synthetic data: train -> eval -> resume ->
// summary -> plot -> graph, and every misuse answered with one line and exit code 2.
#include <doctest/doctest.h>
#include <sched.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/tools/cli_helpers.h"

using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {
// A model and data small enough for a test: depth 2, dim 16, 500 synthetic images.
const std::string kTiny = "--data synthetic --depth 2 --dim 16 --heads 2 --batch 50 --threads 1 ";
}  // namespace

// The percentage after `label` in `text` ("test accuracy: 41.20%" -> 41.2), or -1.
double percent_after(const std::string& text, const std::string& label) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(label + "(\\d+\\.\\d\\d)%"))) return -1;
  return std::stod(m[1]);
}

TEST_CASE("train, eval, resume, summary, plot, graph and gradcheck work end to end") {
  const fs::path dir = scratch_dir("cli_flow");
  const std::string run = (dir / "run").string();
  auto r =
      vitgrad("train " + kTiny + "--steps 12 --log-every 4 --layerscale 1e-4 --grn --out " + run);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const double reported = percent_after(r.out, "\ntest accuracy: ");
  CHECK(reported >= 0);
  // Not a terminal: plain progress lines, one per logged step, no carriage returns.
  CHECK(r.err.find("step 4/12") != std::string::npos);
  CHECK(r.err.find("step 12/12") != std::string::npos);
  CHECK(r.err.find('\r') == std::string::npos);
  for (const char* f : {"config.json", "metrics.jsonl", "last.json", "best.json"})
    CHECK(fs::exists(fs::path(run) / f));
  // metrics.jsonl: three step records and one epoch record, with every field the plots use.
  std::istringstream lines(read_text(fs::path(run) / "metrics.jsonl"));
  int steps = 0, epochs = 0;
  double first_loss = 0, last_epoch_loss = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["kind"] == "step") {
      ++steps;
      CHECK(j["step"] == 4 * steps);
      CHECK(j["epoch"] == 0);
      for (const char* key : {"loss", "accuracy", "lr", "grad_norm", "images_per_s"})
        CHECK_MESSAGE(j[key].is_number(), key);
      if (steps == 1) first_loss = j["loss"];
      CHECK(j["layerscale"].size() == 4);  // 2 blocks x (ls1, ls2)
      CHECK(j["layerscale"]["blocks.1.ls2"].get<double>() > 0);
      CHECK(j["grn"].contains("blocks.0.mlp.grn"));
    } else {
      ++epochs;
      CHECK(j["kind"] == "epoch");
      CHECK(j["test_accuracy"].get<double>() == doctest::Approx(reported / 100).epsilon(1e-4));
      last_epoch_loss = j["train_loss"];
    }
  }
  CHECK(steps == 3);
  CHECK(epochs == 1);
  CHECK(first_loss > 0);
  CHECK(last_epoch_loss < std::log(10.0));  // below chance: it learned something

  // eval of the final weights gives the accuracy the run reported, as one JSON line.
  r = vitgrad("eval " + run + "/last.json --json");
  REQUIRE(r.exit_code == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  CHECK(r.out.rfind("{\"loss\":", 0) == 0);
  const auto eval = nlohmann::json::parse(r.out);
  CHECK(eval.size() == 3);
  CHECK(eval["count"] == 500);
  CHECK(eval["accuracy"].get<double>() == doctest::Approx(reported / 100).epsilon(1e-4));
  r = vitgrad("eval " + run + "/last.json --split train");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("train loss: ", 0) == 0);
  CHECK(r.out.find(" over 2000 images\ntrain accuracy: ") != std::string::npos);
  CHECK(percent_after(r.out, "\ntrain accuracy: ") >= 0);

  r = vitgrad("train --resume " + run + "/last.json --steps 16");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("resuming") != std::string::npos);
  CHECK(nlohmann::json::parse(read_text(fs::path(run) / "last.json"))["step"] == 16);

  r = vitgrad("summary --depth 2 --grn --layerscale auto");
  REQUIRE(r.exit_code == 0);
  for (const char* column : {"layer", "output shape", "parameters", "forward FLOPs"})
    CHECK(r.out.find(column) != std::string::npos);
  CHECK(r.out.find("blocks.1.mlp") != std::string::npos);
  CHECK(r.out.find("\ntotal ") != std::string::npos);
  r = vitgrad("summary --depth 2 --grn --layerscale auto --json");
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["total_parameters"].get<int64_t>() > 0);
  CHECK(summary["layers"].size() > 5);

  for (const char* what : {"loss", "accuracy", "lr", "layerscale", "grn"}) {
    const fs::path svg = dir / (std::string(what) + ".svg");
    r = vitgrad("plot " + run + "/metrics.jsonl --what " + what + " -o " + svg.string());
    INFO(what, ": ", r.err);
    CHECK(r.exit_code == 0);
    CHECK(read_text(svg).rfind("<svg", 0) == 0);
  }

  r = vitgrad("graph --depth 1 --dim 16 --heads 2 -o " + (dir / "g.dot").string());
  CHECK(r.exit_code == 0);
  const std::string dot = read_text(dir / "g.dot");
  CHECK(dot.rfind("digraph", 0) == 0);
  // A node names its op, the module that ran it and its shape.
  CHECK(dot.find("label=\"qkv_attention\nblocks.0.attn\n[2,50,16]\"") != std::string::npos);

  r = vitgrad("gradcheck --only LayerNorm");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("1 passed, 0 failed") != std::string::npos);
}

TEST_CASE("every misuse is one line on stderr and exit code 2") {
  const fs::path dir = scratch_dir("cli_misuse");
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
      {"", "vitgrad: no command given"},
      {"demo now", "unexpected argument 'now'"},
      {"eval x.json --split validation", "--split must be one of test|train, got 'validation'"},
      {"train --data-dir", "--data-dir needs a value (DIR)"},
      {"train --batch 64 --batch 32", "--batch given twice"},
      {"train --no-augment=1", "--no-augment takes no value"},
      {"train --momentum 1", "--momentum must be between 0 and 0.9999, got 1"},
      {"train --warmup -3", "--warmup must be at least 0, got -3"},
      {"train --accum 0", "--accum must be between 1 and 1024, got 0"},
      {"train --label-smoothing 1", "--label-smoothing must be between 0 and 0.999, got 1"},
      {"train --ema 1", "--ema must be between 0 and 0.999999, got 1"},
      {"train --save-every x", "--save-every expects a whole number, got 'x'"},
      {"train --sched linear", "--sched must be one of constant|step|cosine|learnable-scaler"},
      {"train --pool max", "--pool must be one of token|avg, got 'max'"},
      {"summary --heads 5", "embed_dim 64 is not divisible by num_heads 5"},
      {"plot m.jsonl --what speed -o x.svg",
       "--what must be one of loss|accuracy|lr|layerscale|grn"},
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

TEST_CASE("--help lists every flag of the documented command line") {
  const std::string model =
      "--preset --config --depth --dim --heads --patch --mlp-ratio --norm --layerscale --grn "
      "--pool --drop-path --dropout --stem ";
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"train", model + "--data --data-dir --epochs --steps --batch --opt --lr --wd --momentum "
                        "--sched --warmup --clip --accum --label-smoothing --no-augment --seed "
                        "--threads --ema --init --resume --out --save-every"},
      {"eval", "--data-dir --split --json"},
      {"summary", model + "--json"},
      {"gradcheck", "--only --json"},
      {"plot", "--what -o"},
      {"graph", model + "-o"},
  };
  for (const auto& [command, flags] : commands) {
    const auto r = vitgrad(command + " --help");
    REQUIRE(r.exit_code == 0);
    std::istringstream names(flags);
    for (std::string flag; names >> flag;) {
      INFO("vitgrad ", command, " --help lacks ", flag);
      CHECK(r.out.find("\n  " + flag + " ") != std::string::npos);
    }
  }
}

// Checks that `vitgrad ARGS` fails with exit code 2 and one stderr line holding `message`.
void check_refused(const std::string& args, const std::string& message) {
  const auto r = vitgrad(args);
  INFO("vitgrad ", args, "\nstderr: ", r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(message) != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.empty());
}

TEST_CASE("a forgotten value is refused, not taken from the next flag") {
  const fs::path dir = scratch_dir("cli_values");
  check_refused("train " + kTiny + "--steps 1 --out --no-augment",
                "vitgrad train: --out needs a value, got --no-augment");
  CHECK_FALSE(fs::exists(dir / "--no-augment"));
  CHECK_FALSE(fs::exists("--no-augment"));
  check_refused("train --resume --steps 5", "--resume needs a value, got --steps");
  check_refused("eval x.json --split -h", "--split needs a value, got -h");
  check_refused("plot m.jsonl -o --what loss", "-o needs a value, got --what");
  // "--flag=VALUE" takes the value as it is: the way to a folder whose name starts with "-".
  auto r = vitgrad("train " + kTiny + "--steps 1 --out=" + (dir / "--odd").string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir / "--odd" / "last.json"));
  // Negative numbers are values, answered by the flag's range.
  check_refused("train --lr -1", "--lr must be between 0 and 100, got -1");
  check_refused("train --lr -1e-3", "--lr must be between 0 and 100, got -1e-3");
  check_refused("train --clip -.5", "--clip must be between 0 and 1e+12, got -.5");
  check_refused("train --seed -7", "--seed must be at least 0, got -7");
}

TEST_CASE("an unknown flag or command names the nearest known one") {
  check_refused("train --warmpu 5", "unknown flag --warmpu (did you mean --warmup?)");
  check_refused("train --epoch 3", "unknown flag --epoch (did you mean --epochs?)");
  check_refused("train --label 0.1", "unknown flag --label (did you mean --label-smoothing?)");
  check_refused("train --no-augmentation", "(did you mean --no-augment?)");
  check_refused("train --lr-min=0.1", "unknown flag --lr-min (did you mean --min-lr?)");
  check_refused("eval x.json --jsn", "unknown flag --jsn (did you mean --json?)");
  check_refused("summary --hlep", "unknown flag --hlep (did you mean --help?)");
  check_refused("trian", "unknown command 'trian' (did you mean train?)");
  check_refused("gradchek", "unknown command 'gradchek' (did you mean gradcheck?)");
  check_refused("train --opt adam",
                "--opt must be one of sgd|adamw|lamb, got 'adam' (did you mean adamw?)");
  check_refused("train --sched cosin", "got 'cosin' (did you mean cosine?)");
  check_refused("summary --norm learnable-scaler",
                "got 'learnable-scaler' (did you mean learnable_scaler?)");
  // Nothing close: the pointer to --help instead of a wild guess.
  check_refused("train --bogus", "unknown flag --bogus (see vitgrad train --help)");
  check_refused("frobnicate", "unknown command 'frobnicate' (see vitgrad --help)");
}

TEST_CASE("--threads above the cores this process can use is one warning line") {
  cpu_set_t set;
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  const int cores = CPU_COUNT(&set);
  if (cores >= 256) return;  // --threads stops at 256: nothing to warn about here
  const fs::path dir = scratch_dir("cli_threads");
  const std::string run = (dir / "run").string();
  const std::string warning = "vitgrad train: warning: --threads " + std::to_string(cores + 1) +
                              " is more than the " + std::to_string(cores) +
                              " cores this process can use; the threads will take turns\n";
  auto r = vitgrad("train --data synthetic --depth 1 --dim 16 --heads 2 --batch 50 --steps 1 "
                   "--threads " + std::to_string(cores + 1) + " --out " + run);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.rfind(warning, 0) == 0);  // the first line, once
  CHECK(r.err.find("warning", warning.size()) == std::string::npos);
  r = vitgrad("eval " + run + "/last.json --json --threads " + std::to_string(cores + 1));
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("vitgrad eval: warning: --threads " + std::to_string(cores + 1)) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(nlohmann::json::parse(r.out)["count"] == 500);
  r = vitgrad("eval " + run + "/last.json --json --threads " + std::to_string(cores));
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
}
