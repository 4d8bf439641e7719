// `vitgrad export --format safetensors` and `vitgrad import`: the weights travel through
// safetensors to the bit, `train --init` reads them, a model gains LayerScale without
// changing its function, and files that do not fit the model are one line and exit code 2.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/io/safetensors.h"
#include "tests/tools/cli_helpers.h"

using nlohmann::json;
using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {

const std::string kModel = " --data synthetic --depth 1 --dim 16 --heads 2 --pool avg";
const std::string kEval = " --data synthetic --json --threads 1";

// A short run of a tiny model in `dir`/run; returns its last checkpoint.
std::string tiny_run(const fs::path& dir) {
  const std::string run = (dir / "run").string();
  const auto r = vitgrad("train" + kModel + " --batch 50 --steps 3 --threads 1 --out " + run);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return run + "/last.json";
}

}  // namespace

TEST_CASE("safetensors export and import carry the weights to the bit") {
  const fs::path dir = scratch_dir("interop_roundtrip");
  const std::string ck = tiny_run(dir), st = (dir / "m.safetensors").string(),
                    back = (dir / "back.json").string(), weights = (dir / "w.json").string();
  auto r = vitgrad("export " + ck + " --format safetensors -o " + st);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const vg::SafeTensors file = vg::load_safetensors(st);
  CHECK(file.metadata.at("format") == "pt");
  CHECK(json::parse(file.metadata.at("vitgrad_config")) == json::parse(read_text(ck))["config"]);
  CHECK(file.metadata.at("vitgrad_step") == "3");
  const json no_decay = json::parse(file.metadata.at("vitgrad_no_weight_decay"));
  CHECK(std::count(no_decay.begin(), no_decay.end(), "pos_embed") == 1);
  CHECK(std::count(no_decay.begin(), no_decay.end(), "blocks.0.attn.qkv.bias") == 1);
  CHECK(std::count(no_decay.begin(), no_decay.end(), "blocks.0.attn.qkv.weight") == 0);
  CHECK(file.tensors.count("fc_norm.weight") == 1);  // timm's names: avg pooling's final norm
  CHECK(file.tensors.at("blocks.0.attn.qkv.weight").shape() == vg::Shape{48, 16});

  r = vitgrad("import " + st + " -o " + back);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(vitgrad("export " + ck + " -o " + weights).exit_code == 0);
  const json a = json::parse(read_text(weights)), b = json::parse(read_text(back));
  CHECK(a["config"] == b["config"]);
  CHECK(a["model"] == b["model"]);
  CHECK(b["step"] == 3);

  // The ONNX graph of the same weights (its content: tests/models/onnx_export_test.cpp).
  const std::string onnx = (dir / "m.onnx").string();
  r = vitgrad("export " + ck + " --format onnx -o " + onnx);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(read_text(onnx).substr(0, 2) == std::string("\x08\x08"));  // ir_version 8
  r = vitgrad("export " + ck + " --format tflite -o " + onnx);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--format") != std::string::npos);

  // train --init takes the safetensors file itself.
  r = vitgrad("train --init " + st + " --data synthetic --batch 50 --steps 1 --threads 1 --out " +
              (dir / "ft").string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("a stem model's export carries the stem: safetensors to the bit, ONNX Conv nodes") {
  const fs::path dir = scratch_dir("interop_stem");
  const std::string run = (dir / "run").string(), st = (dir / "m.safetensors").string(),
                    back = (dir / "back.json").string(), weights = (dir / "w.json").string();
  auto r = vitgrad("train" + kModel + " --stem conv:4,8 --patch 1 --batch 20 --steps 2 "
                   "--threads 1 --out " + run);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string ck = run + "/last.json";
  REQUIRE(vitgrad("export " + ck + " --format safetensors -o " + st).exit_code == 0);
  const vg::SafeTensors file = vg::load_safetensors(st);
  CHECK(json::parse(file.metadata.at("vitgrad_config"))["stem"] == "conv:4,8");
  CHECK(file.tensors.at("stem.conv1.weight").shape() == vg::Shape{4, 1, 3, 3});  // PyTorch's
  CHECK(file.tensors.at("stem.conv2.weight").shape() == vg::Shape{8, 4, 3, 3});
  CHECK(file.tensors.at("patch_embed.proj.weight").shape() == vg::Shape{16, 8, 1, 1});
  const json no_decay = json::parse(file.metadata.at("vitgrad_no_weight_decay"));
  CHECK(std::count(no_decay.begin(), no_decay.end(), "stem.conv1.bias") == 1);
  CHECK(std::count(no_decay.begin(), no_decay.end(), "stem.conv1.weight") == 0);
  r = vitgrad("import " + st + " -o " + back);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(vitgrad("export " + ck + " -o " + weights).exit_code == 0);
  const json a = json::parse(read_text(weights)), b = json::parse(read_text(back));
  CHECK(a["config"] == b["config"]);
  CHECK(a["model"] == b["model"]);
  CHECK(a["model"].contains("stem.conv2.bias"));
  r = vitgrad("export " + ck + " --format onnx -o " + (dir / "m.onnx").string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(read_text(dir / "m.onnx").find("stem.conv2.weight") != std::string::npos);
}

TEST_CASE("import --add-layerscale 1.0 keeps the model's function and records LayerScale") {
  const fs::path dir = scratch_dir("interop_layerscale");
  const std::string ck = tiny_run(dir), st = (dir / "m.safetensors").string(),
                    ls = (dir / "ls.json").string();
  REQUIRE(vitgrad("export " + ck + " --format safetensors -o " + st).exit_code == 0);
  auto r = vitgrad("import " + st + " --add-layerscale 1.0 -o " + ls);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json imported = json::parse(read_text(ls));
  CHECK(imported["config"]["layerscale"] == "1");  // the shortest spelling
  CHECK(imported["model"].contains("blocks.0.ls2.gamma"));
  const auto before = vitgrad("eval " + ck + kEval), after = vitgrad("eval " + ls + kEval);
  REQUIRE(after.exit_code == 0);
  CHECK(json::parse(before.out) == json::parse(after.out));  // x * 1.0 is x, to the bit

  // A model that has LayerScale cannot gain it twice.
  r = vitgrad("import " + st + " --layerscale 1e-4 --depth 1 --dim 16 --heads 2 -o " + ls);
  CHECK(r.exit_code == 2);
}

TEST_CASE("import: a file that does not fit the model is one line and exit code 2") {
  const fs::path dir = scratch_dir("interop_bad");
  const std::string ck = tiny_run(dir), st = (dir / "m.safetensors").string(),
                    out = (dir / "out.json").string();
  REQUIRE(vitgrad("export " + ck + " --format safetensors -o " + st).exit_code == 0);
  auto fails = [&](const std::string& args, const std::string& message) {
    const auto r = vitgrad(args);
    INFO(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err == message + "\n");
    CHECK_FALSE(fs::exists(out));
  };
  // Names: a deeper model misses blocks; a model with a class token's norm has no fc_norm.
  fails("import " + st + " --depth 2 --dim 16 --heads 2 --pool avg -o " + out,
        "vitgrad: " + st + ": model entry 'blocks.1.norm1.weight' is missing");
  fails("import " + st + " --depth 1 --dim 16 --heads 2 --pool token -o " + out,
        "vitgrad: " + st + ": model entry 'norm.weight' is missing");
  // Shapes.
  fails("import " + st + " --depth 1 --dim 16 --heads 2 --pool avg --mlp-ratio 4 -o " + out,
        "vitgrad: " + st + ": model entry 'blocks.0.mlp.fc1.weight' has shape [32,16], the model's "
        "is [64,16]");
  // A file without vitgrad's config in its metadata (as timm writes them) needs one.
  vg::SafeTensors bare = vg::load_safetensors(st);
  bare.metadata = {{"format", "pt"}};
  const std::string timm = (dir / "timm.safetensors").string();
  vg::save_safetensors(timm, bare);
  fails("import " + timm + " -o " + out,
        "vitgrad: " + timm +
            ": no 'vitgrad_config' in the metadata (not a vitgrad export): give the model's "
            "config, e.g. vitgrad import " + timm + " --config CONFIG.json -o model.json");
  fails("train --init " + timm + " --data synthetic --steps 1 --out " + out,
        "vitgrad: " + timm +
            ": no 'vitgrad_config' in the metadata (not a vitgrad export): give the model's "
            "config, e.g. vitgrad import " + timm + " --config CONFIG.json -o model.json");
  // A truncated file.
  const std::string bytes = read_text(st), cut = (dir / "cut.safetensors").string();
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 1);
  const auto r = vitgrad("import " + cut + " -o " + out);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("vitgrad: " + cut + ": tensor '", 0) == 0);
  CHECK(r.err.find("] lie outside the ") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  fails("import " + ck + " -o " + out,
        "vitgrad import: " + ck + " is not a .safetensors file");
}
