// timm's and the LearnableScaler reference's flag and model names: the reference training
// command runs as written, and each name lands in the right option.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/core/error.h"
#include "engine/kernels/matmul_precision.h"
#include "tests/tools/cli_helpers.h"
#include "tools/model_names.h"

using namespace vg;
using namespace vg::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The command of the LearnableScaler paper's train.py, without its data folder.
const std::string kReference =
    "--model vit_learnable_scaler_embed_dim192_patch16_head3_depth36 --weight-decay 0.02 "
    "--opt lamb --aa rand-m7-mstd0.5 --warmup-epoch 0 --epochs 300 --sched custom --mixup 0.1 "
    "--cutmix 1 --batch-size 256 --workers 14 --clip-grad 14 --grad-accum-steps 8 --lr 0.005 "
    "--amp --amp-dtype bfloat16 --torchcompile inductor --epoch-factor 0.8 --epoch-threshold 0.5 "
    "--train-feature-decay 0.1 --attn-extra-loss 0.03 --attn-extra-loss-layers 6";

const std::string kAmpFlags = " --amp --amp-dtype bfloat16";

// The reference command with `flags` in place of its --amp flags.
std::string reference_with(const std::string& flags) {
  std::string command = kReference;
  const auto at = command.find(kAmpFlags);
  REQUIRE(at != std::string::npos);
  return command.replace(at, kAmpFlags.size(), flags);
}

// The lines of `err` that are not warnings (the reference's ignored flags warn).
int count_errors(const std::string& err) {
  int errors = 0;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);)
    errors += line.find(": warning: ") == std::string::npos;
  return errors;
}

// A CPU without bf16 units refuses timm's --amp with the one line of `--amp bf16`, and starts
// no run folder.
void check_refused_without_bf16_units(const std::string& train_args, const fs::path& out) {
  const CommandResult r =
      vitgrad("train " + train_args + " --out " + out.string(), "VITGRAD_BF16_UNITS=none");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(count_errors(r.err) == 1);
  CHECK(r.err.find("neither AVX512-BF16 nor AMX-BF16") != std::string::npos);
  CHECK(!fs::exists(out));
}

}  // namespace

TEST_CASE("the reference training command runs as written, on data, image size and a step limit") {
  const auto dir = scratch_dir("reference_command");
  const std::string limits = " --data synthetic --synthetic-size 10 --img-size 32 --max-steps 1";
  check_refused_without_bf16_units(kReference + limits, dir / "refused");
  // Where the CPU has no bf16 units, a stand-in runs the command as written (bf16_run_env); on
  // a CPU without AVX2 either, the rest of the command runs without its --amp flags.
  const std::optional<std::string> env = bf16_run_env();
  const std::string command = env ? kReference : reference_with("");
  const CommandResult r =
      vitgrad("train " + command + limits + " --out " + (dir / "run").string(), env.value_or(""));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("warning: --workers means nothing here") != std::string::npos);
  CHECK(r.err.find("warning: --torchcompile means nothing here") != std::string::npos);
  const json config = json::parse(read_text(dir / "run" / "config.json"));
  const json& m = config["model"];
  CHECK(m["norm"] == "learnable_scaler");
  CHECK(m["embed_dim"] == 192);
  CHECK(m["patch_size"] == 16);
  CHECK(m["num_heads"] == 3);
  CHECK(m["depth"] == 36);
  CHECK(m["mlp_ratio"] == 4.0);
  CHECK(m["img_size"] == 32);
  const json& t = config["train"];
  CHECK(t["batch"] == 256);
  CHECK(t["accum"] == 8);
  CHECK(t["clip"] == 14.0);
  CHECK(t["wd"] == 0.02);
  CHECK(t["opt"] == "lamb");
  CHECK(t["sched"] == "learnable-scaler");
  CHECK(t["sched_factor"] == 0.8);
  CHECK(t["sched_threshold"] == 0.5);
  CHECK(t["epochs"] == 300);
  CHECK(t["max_steps"] == 1);
  CHECK(t["warmup"] == 0);
  CHECK(t["rand_augment"] == "rand-m7-mstd0.5");
  CHECK(t["mixup"] == 0.1);
  CHECK(t["cutmix"] == 1.0);
  CHECK(t["label_smoothing"] == 0.1);  // timm's --smoothing default, into the soft targets
  // train.py multiplies the auxiliary losses by --train-feature-decay once more.
  CHECK(t["feature_decay"].get<double>() == doctest::Approx(0.01));
  CHECK(t["attn_extra_loss"].get<double>() == doctest::Approx(0.003));
  CHECK(t["attn_extra_loss_layers"] == 6);
  CHECK(t["amp"] == (env ? "bf16" : "fp32"));  // timm's --amp switch, where it can run
  std::filesystem::remove_all(dir);
}

TEST_CASE("timm's --amp switch alone means --amp bf16; --amp-dtype float16 is one clear error") {
  const auto dir = scratch_dir("amp_switch");
  const std::string tiny =
      "--data synthetic --synthetic-size 20 --depth 1 --dim 16 --heads 2 "
      "--steps 1 --amp";
  check_refused_without_bf16_units(tiny, dir / "refused");
  if (const std::optional<std::string> env = bf16_run_env()) {
    const CommandResult r = vitgrad("train " + tiny + " --out " + (dir / "run").string(), *env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(json::parse(read_text(dir / "run" / "config.json"))["train"]["amp"] == "bf16");
  }
  const CommandResult fp16 = vitgrad("train --data synthetic --steps 1 --amp --amp-dtype float16");
  CHECK(fp16.exit_code == 2);
  CHECK(fp16.err ==
        "vitgrad train: --amp-dtype float16: only bfloat16 products are available (--amp bf16)\n");
  const CommandResult value = vitgrad("train --data synthetic --steps 1 --amp fp16");
  CHECK(value.err.find("--amp must be one of fp32|bf16|auto, got 'fp16'") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("timm's flag names are aliases: listed in --help, twice is an error, typos are guessed") {
  const CommandResult help = vitgrad("train --help");
  CHECK(help.out.find("[also --batch-size]") != std::string::npos);
  CHECK(help.out.find("[also --smoothing]") != std::string::npos);
  const CommandResult twice = vitgrad("train --batch 8 --batch-size 16");
  CHECK(twice.exit_code == 2);
  CHECK(twice.err == "vitgrad train: --batch given twice (as --batch-size)\n");
  const CommandResult typo = vitgrad("train --weight-decy 0.1");
  CHECK(typo.exit_code == 2);
  CHECK(typo.err == "vitgrad train: unknown flag --weight-decy (did you mean --weight-decay?)\n");
  const CommandResult model = vitgrad("train --model vit_huge_patch14_224 --steps 1");
  CHECK(model.exit_code == 2);
  CHECK(model.err.find("model name 'vit_huge_patch14_224' is not one vitgrad reads") !=
        std::string::npos);
  const CommandResult both = vitgrad("train --preset fmnist-tiny --model vit_tiny_patch16_224");
  CHECK(both.err == "vitgrad train: give one of --preset, --config and --model\n");
}

TEST_CASE("--warmup-epochs becomes warmup steps of the run's epochs") {
  // 100 synthetic images in batches of 10, 2 per step: 5 steps an epoch, 2 epochs -> 10.
  const auto dir = scratch_dir("warmup_epochs");
  const CommandResult r = vitgrad(
      "train --data synthetic --synthetic-size 100 --batch-size 10 --grad-accum-steps 2 "
      "--warmup-epochs 2 --depth 1 --dim 16 --heads 2 --max-steps 1 --out " +
      (dir / "run").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json config = json::parse(read_text(dir / "run" / "config.json"));
  CHECK(config["train"]["warmup"] == 10);
  std::filesystem::remove_all(dir);
}

TEST_CASE("model names of timm and the reference become their configurations") {
  const ViTConfig base = preset("fmnist-tiny");
  const ViTConfig tiny = tools::model_from_name("vit_tiny_patch16_224", base);
  CHECK(tiny.embed_dim == 192);
  CHECK(tiny.num_heads == 3);
  CHECK(tiny.depth == 12);
  CHECK(tiny.patch_size == 16);
  CHECK(tiny.img_size == 224);
  CHECK(tiny.mlp_ratio == 4.0);
  CHECK(tiny.norm == NormKind::layernorm);
  const ViTConfig small = tools::model_from_name("vit_small_patch8_32", base);
  CHECK(small.embed_dim == 384);
  CHECK(small.num_heads == 6);
  CHECK(small.img_size == 32);
  const ViTConfig ls = tools::model_from_name("vit_layer_scale_embed_dim120_patch16_head3_depth24", base);
  CHECK(ls.layerscale == LayerScaleSetting::fixed(1e-5));
  CHECK(ls.norm == NormKind::layernorm);
  CHECK(ls.embed_dim == 120);
  CHECK(ls.depth == 24);
  CHECK(ls.img_size == 28);  // no image size in the name: the base's
  const ViTConfig scaler =
      tools::model_from_name("vit_learnable_scaler_embed_dim288_patch32_head3_depth24", base);
  CHECK(scaler.norm == NormKind::learnable_scaler);
  CHECK(scaler.layerscale == LayerScaleSetting::none());
  CHECK(scaler.patch_size == 32);
  const ViTConfig plain = tools::model_from_name("vit_embed_dim192_patch16_head3_depth12", base);
  CHECK(plain.norm == NormKind::layernorm);
  CHECK(plain.embed_dim == 192);
  CHECK_THROWS_WITH_AS(tools::model_from_name("vit_embed_dim192_patch16", base),
                       doctest::Contains("vit_{tiny|small|base|large}_patch{P}_{image size}"),
                       Error);
}

TEST_CASE("with --ema, the EMA weights' test accuracy is printed and logged beside the raw ones'") {
  const auto dir = scratch_dir("ema_accuracy");
  const CommandResult r = vitgrad("train --data synthetic --synthetic-size 40 --batch 20 --depth 1 "
                                  "--dim 16 --heads 2 --epochs 2 --ema 0.5 --out " +
                                  (dir / "run").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("EMA test accuracy: ") != std::string::npos);
  CHECK(r.err.find("%, EMA weights ") != std::string::npos);
  int epochs = 0;
  std::istringstream lines(read_text(dir / "run" / "metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const json record = json::parse(line);
    if (record["kind"] != "epoch") continue;
    ++epochs;
    CHECK(record["ema_test_accuracy"].is_number());
  }
  CHECK(epochs == 2);
  const CommandResult tta = vitgrad("eval " + (dir / "run" / "last.json").string() +
                                    " --tta flip --json");
  CHECK(tta.exit_code == 0);
  CHECK(json::parse(tta.out)["count"] == 10);
  const CommandResult bad = vitgrad("eval " + (dir / "run" / "last.json").string() + " --tta flop");
  CHECK(bad.err == "vitgrad eval: --tta must be one of none|flip, got 'flop' (did you mean flip?)\n");
  std::filesystem::remove_all(dir);
}
