// A corpus of bad inputs, each run through the real `vitgrad` binary: damaged checkpoints,
// broken config files, broken IDX data and flags that do not fit together. Every one must
// be answered with one line on stderr naming what is wrong, exit code 2, nothing on stdout
// and no output folder left behind.
#include <doctest/doctest.h>
#include <zlib.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "tests/tools/cli_helpers.h"

using nlohmann::json;
using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {

const std::string kTiny =
    "--data synthetic --synthetic-size 40 --depth 1 --dim 8 --heads 2 "
    "--batch 20 --threads 1 ";

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A big-endian IDX file: magic, sizes, then `data_bytes` bytes of `value`.
std::string idx(uint32_t magic, std::vector<uint32_t> sizes, int64_t data_bytes, uint8_t value) {
  sizes.insert(sizes.begin(), magic);
  std::string out;
  for (uint32_t w : sizes)
    for (int shift = 24; shift >= 0; shift -= 8) out += char((w >> shift) & 0xff);
  return out + std::string(size_t(data_bytes), char(value));
}

std::string gzip(const std::string& bytes) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = uInt(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A folder of test-split Fashion-MNIST files: 20 images of `side` x `side` and their labels.
fs::path idx_dir(const fs::path& root, const std::string& name, const std::string& images,
                 const std::string& labels) {
  const fs::path dir = root / name;
  fs::create_directories(dir);
  write(dir / "t10k-images-idx3-ubyte", images);
  write(dir / "t10k-labels-idx1-ubyte", labels);
  return dir;
}

struct Case {
  std::string name, args, message;
};

}  // namespace

TEST_CASE("every bad checkpoint, config, data file and flag is one line and exit code 2") {
  const fs::path dir = scratch_dir("bad_inputs");
  const fs::path run = dir / "run";
  const auto trained = vitgrad("train " + kTiny + "--steps 2 --out " + run.string());
  INFO(trained.err);
  REQUIRE(trained.exit_code == 0);
  const json good = json::parse(read_text(run / "last.json"));
  const std::string ck = (run / "last.json").string();

  // --- checkpoints: each a copy of a good one with one thing wrong ---
  auto variant = [&](const std::string& name, const std::function<void(json&)>& edit) {
    json c = good;
    edit(c);
    const fs::path path = dir / (name + ".json");
    write(path, c.dump());
    return path.string();
  };
  const std::string text = good.dump();
  write(dir / "truncated.json", text.substr(0, text.size() / 2));
  write(dir / "empty.json", "");
  const std::string truncated = (dir / "truncated.json").string();
  const std::string empty = (dir / "empty.json").string();
  const std::string other_format = variant("format", [](json& c) { c["format"] = "safetensors"; });
  const std::string version3 = variant("version", [](json& c) { c["version"] = 3; });
  const std::string extra_entry = variant("entry", [](json& c) { c["bogus"] = 1; });
  const std::string short_data =
      variant("short", [](json& c) { c["model"]["norm.weight"]["data"].erase(0); });
  const std::string string_value =
      variant("string", [](json& c) { c["model"]["norm.weight"]["data"][3] = "x"; });
  const std::string overflow =
      variant("overflow", [](json& c) { c["model"]["norm.bias"]["data"][0] = 1e39; });
  const std::string missing = variant("missing", [](json& c) { c["model"].erase("norm.weight"); });
  const std::string wrong_dtype =
      variant("dtype", [](json& c) { c["model"]["norm.weight"]["dtype"] = "int8"; });
  const std::string wider = variant("wider", [](json& c) { c["config"]["embed_dim"] = 16; });
  const std::string heads = variant("heads", [](json& c) { c["config"]["num_heads"] = 3; });
  const std::string negative_step = variant("step", [](json& c) { c["step"] = -4; });
  const std::string weights_only = variant("weights", [](json& c) { c["optimizer"] = nullptr; });
  const std::string no_epoch = variant("epoch", [](json& c) { c["data"].erase("epoch"); });
  const std::string bad_seed = variant("seed", [](json& c) { c["data"]["seed"] = "12ab"; });
  const std::string zero_rng = variant("rng", [](json& c) {
    c["rng"]["augment"]["s"] = json::array(
        {"0000000000000000", "0000000000000000", "0000000000000000", "0000000000000000"});
  });
  const std::string cursor = variant("cursor", [](json& c) { c["data"]["cursor"] = 4000; });
  const std::string other_opt = variant("opt", [](json& c) { c["optimizer"]["name"] = "sgd"; });
  const std::string total = variant("total", [](json& c) { c["extra"]["total_steps"] = "many"; });
  const std::string bad_batch = variant("batch", [](json& c) { c["extra"]["train"]["batch"] = 0; });

  // --- config files ---
  write(dir / "broken.cfg", "{\"depth\": 2,");
  write(dir / "typo.cfg", "{\"depht\": 2}");
  write(dir / "type.cfg", "{\"embed_dim\": \"wide\"}");
  write(dir / "heads.cfg", "{\"embed_dim\": 30, \"num_heads\": 4}");
  write(dir / "patch.cfg", "{\"patch_size\": 5}");
  write(dir / "depth.cfg", "{\"depth\": -1}");
  write(dir / "array.cfg", "[1, 2]");
  write(dir / "stem.cfg", "{\"stem\": \"resnet:64\"}");
  write(dir / "huge.cfg", "{\"depth\": 1000, \"embed_dim\": 8192, \"num_heads\": 8}");
  write(dir / "run.cfg", "{\"model\": {\"norm\": \"batchnorm\"}, \"train\": {}}");
  auto cfg = [&](const char* name) { return (dir / name).string(); };

  // --- IDX data (the test split that eval reads) ---
  const std::string labels20 = idx(0x801, {20}, 20, 3);
  const std::string images20 = idx(0x803, {20, 28, 28}, 20 * 28 * 28, 128);
  const fs::path magic = idx_dir(dir, "magic", idx(0x802, {20, 28, 28}, 20 * 784, 0), labels20);
  const fs::path cut = idx_dir(dir, "cut", images20.substr(0, 5000), labels20);
  const fs::path label11 = idx_dir(dir, "label", images20, idx(0x801, {20}, 20, 11));
  const fs::path count = idx_dir(dir, "count", images20, idx(0x801, {19}, 19, 3));
  const fs::path side = idx_dir(dir, "side", idx(0x803, {20, 32, 32}, 20 * 1024, 0), labels20);
  const fs::path header = idx_dir(dir, "header", std::string("\0\0\x08\x03\0\0", 6), labels20);
  const fs::path huge = idx_dir(dir, "huge", idx(0x803, {4000000000u, 28, 28}, 100, 0), labels20);
  const fs::path longer = idx_dir(dir, "longer", images20 + "x", labels20);
  const std::string zipped = gzip(images20);
  const fs::path gz_cut = dir / "gzcut";
  fs::create_directories(gz_cut);
  write(gz_cut / "t10k-images-idx3-ubyte.gz", zipped.substr(0, zipped.size() - 6));
  write(gz_cut / "t10k-labels-idx1-ubyte", labels20);
  const fs::path gz_bad = dir / "gzbad";
  fs::create_directories(gz_bad);
  write(gz_bad / "t10k-images-idx3-ubyte.gz",
        std::string("\x1f\x8b\x08\0\0\0\0\0\0\x03", 10) + std::string(40, '\x7f'));
  write(gz_bad / "t10k-labels-idx1-ubyte", labels20);
  auto eval_on = [&](const fs::path& data) {
    return "eval " + ck + " --data fashion-mnist --data-dir " + data.string();
  };

  // A run folder that already holds a run, and a file where a folder should be.
  write(dir / "a_file", "x");
  const std::string out = " --out " + (dir / "out").string();
  const std::vector<Case> cases = {
      // checkpoints
      {"checkpoint: missing file", "eval " + (dir / "nope.json").string(),
       "nope.json: cannot open"},
      {"checkpoint: a folder", "eval " + run.string(), "is a folder, expected a checkpoint file"},
      {"checkpoint: truncated", "eval " + truncated,
       "not a valid JSON document (truncated or damaged?)"},
      {"checkpoint: empty", "eval " + empty, "not a valid JSON document"},
      {"checkpoint: other format", "eval " + other_format, "format is \"safetensors\""},
      {"checkpoint: newer version", "eval " + version3, "version 3 is not supported"},
      {"checkpoint: unknown entry", "eval " + extra_entry, "unexpected entry 'bogus'"},
      {"checkpoint: data shorter than shape", "eval " + short_data,
       "model entry 'norm.weight': data has 7 values, shape [8] needs 8"},
      {"checkpoint: a string among the values", "eval " + string_value,
       "model entry 'norm.weight': data[3] is not a number: \"x\""},
      {"checkpoint: value overflows float32", "eval " + overflow,
       "model entry 'norm.bias': data[0] = 1e+39 is not a finite float32"},
      {"checkpoint: missing parameter", "eval " + missing, "model entry 'norm.weight' is missing"},
      {"checkpoint: unknown dtype", "eval " + wrong_dtype,
       "dtype must be \"float32\" or \"float64\""},
      {"checkpoint: config does not match weights", "eval " + wider,
       "model entry 'cls_token' has shape [1,1,8], the model's is [1,1,16]"},
      {"checkpoint: invalid config", "eval " + heads,
       "embed_dim 8 is not divisible by num_heads 3"},
      {"checkpoint: negative step", "eval " + negative_step,
       "entry 'step' is not a non-negative integer"},
      {"resume: weights only", "train --resume " + weights_only + out,
       "a weights-only checkpoint cannot be resumed"},
      {"resume: loader epoch missing", "train --resume " + no_epoch + out,
       "data entry 'epoch' is missing"},
      {"resume: loader seed not a number", "train --resume " + bad_seed + out,
       "data entry 'seed' must be a decimal uint64 in a string, got \"12ab\""},
      {"resume: generator state all zero", "train --resume " + zero_rng + out,
       "rng entry 'augment': s is all zero"},
      {"resume: loader cursor past the data", "train --resume " + cursor + out,
       "saved cursor 4000 out of range [0, 40)"},
      {"resume: optimiser of another kind", "train --resume " + other_opt + out,
       "saved by optimiser \"sgd\", this is 'adamw'"},
      {"resume: total steps not a number", "train --resume " + total + out,
       "extra entry 'total_steps' must be an integer >= 0, got \"many\""},
      {"resume: saved recipe invalid", "train --resume " + bad_batch + out,
       "--batch must be between 1 and 65536, got 0"},
      {"resume: step past the total", "train --resume " + ck + " --steps 1" + out,
       "the checkpoint is at step 2, past the requested total of 1 steps"},
      {"init: not a checkpoint", "train --data synthetic --steps 1 --init " + cfg("typo.cfg") + out,
       "missing entry 'format'"},
      // config files
      {"config: missing file", "train --config " + cfg("nope.cfg") + out,
       "cannot read config file"},
      {"config: not JSON", "train --config " + cfg("broken.cfg") + out,
       "broken.cfg is not valid JSON"},
      {"config: unknown key", "train --config " + cfg("typo.cfg") + out,
       "typo.cfg: unknown key 'depht' in the ViTConfig (did you mean 'depth'?)"},
      {"config: wrong type", "train --config " + cfg("type.cfg") + out,
       "ViTConfig: 'embed_dim' must be an integer, got \"wide\""},
      {"config: dim not divisible by heads", "summary --config " + cfg("heads.cfg"),
       "embed_dim 30 is not divisible by num_heads 4"},
      {"config: image not divisible by patch", "train --config " + cfg("patch.cfg") + out,
       "img_size 28 is not divisible by patch_size 5"},
      {"config: negative depth", "summary --config " + cfg("depth.cfg"),
       "'depth' must be positive, got -1"},
      {"config: a model too big to allocate",
       "train --data synthetic --config " + cfg("huge.cfg") + out,
       "parameters, more than the limit of 1e+09 (depth 1000, embed_dim 8192)"},
      {"config: an array", "summary --config " + cfg("array.cfg"),
       "ViTConfig: expected a JSON object"},
      {"config: a run's config.json with a bad norm", "summary --config " + cfg("run.cfg"),
       "'norm' must be layernorm or learnable_scaler, got 'batchnorm'"},
      // IDX data
      {"idx: folder missing", eval_on(dir / "nowhere"), "directory not found"},
      {"idx: bad magic", eval_on(magic), "bad magic 0x00000802, expected 0x00000803"},
      {"idx: truncated pixels", eval_on(cut), "truncated: header declares 20 images of 28x28"},
      {"idx: truncated header", eval_on(header), "truncated header: 6 bytes"},
      {"idx: label out of range", eval_on(label11),
       "label 11 at index 0 is out of range for 10 classes"},
      {"idx: counts differ", eval_on(count), "19 labels, but"},
      {"idx: images of another size", eval_on(side), "images are 32x32x1, expected 28x28x1"},
      {"idx: absurd count", eval_on(huge),
       "header declares 4000000000 images, more than the limit"},
      {"idx: trailing bytes", eval_on(longer), "more data than the header declares"},
      {"idx: gzip cut short", eval_on(gz_cut), "gzip"},
      {"idx: corrupt gzip", eval_on(gz_bad), "corrupt gzip data"},
      // flags
      {"flags: heads do not divide dim", "train --data synthetic --dim 30 --heads 4" + out,
       "embed_dim 30 is not divisible by num_heads 4"},
      {"flags: patch does not divide image", "train --data synthetic --patch 6" + out,
       "img_size 28 is not divisible by patch_size 6"},
      {"flags: stem not conv:C1,C2,...", "train --data synthetic --stem conv:32,,64" + out,
       "'stem' must be none or conv:C1,C2,... with 1 to 8 channel counts in [1, 4096], each "
       "with s1 after it for stride 1, got 'conv:32,,64'"},
      {"flags: stem output not divisible by patch", "train --data synthetic --stem conv:8,8" + out,
       "the stem's 7x7 output (img_size 28, 2 stages) is not divisible by patch_size 4"},
      {"flags: stem norm of another kind",
       "train --data synthetic --stem conv:8,8 --patch 7 --stem-norm batchnorm" + out,
       "--stem-norm must be one of none|layernorm, got 'batchnorm'"},
      {"flags: stem norm without a stem", "train --data synthetic --stem-norm layernorm" + out,
       "'stem_norm' is layernorm but there is no stem"},
      {"config: stem of another kind", "summary --config " + cfg("stem.cfg"),
       "'stem' must be none or conv:C1,C2,..."},
      {"flags: a model too big to allocate", "summary --depth 64 --dim 16384 --heads 16",
       "parameters, more than the limit of 1e+09 (depth 64, embed_dim 16384)"},
      {"flags: learning rate not a number", "train --data synthetic --lr 1e-3x" + out,
       "--lr expects a number, got '1e-3x'"},
      {"flags: learning rate infinite", "train --data synthetic --lr inf" + out,
       "--lr expects a number"},
      {"flags: steps negative", "train --data synthetic --steps -5" + out,
       "--steps must be at least 1, got -5"},
      {"flags: steps not whole", "train --data synthetic --steps 2.5" + out,
       "--steps expects a whole number, got '2.5'"},
      {"flags: drop-path of one", "train --data synthetic --drop-path 1" + out,
       "--drop-path must be between 0"},
      {"flags: threads zero", "train --data synthetic --threads 0" + out,
       "--threads must be between 1"},
      {"flags: synthetic size too small", "train --data synthetic --synthetic-size 3" + out,
       "--synthetic-size must be between 10"},
      {"flags: unknown data set", "train --data cifar10" + out, "--data must be one of"},
      {"flags: --out is a file", "train " + kTiny + "--steps 1 --out " + (dir / "a_file").string(),
       "exists and is not a folder"},
      {"flags: --out holds a run", "train " + kTiny + "--steps 1 --out " + run.string(),
       "already holds a run (config.json)"},
      {"flags: --init with model flags", "train --init " + ck + " --depth 3" + out,
       "--depth cannot be combined with --init"},
      {"flags: resume changes the recipe", "train --resume " + ck + " --batch 7" + out,
       "--batch cannot be changed when resuming"},
  };
  CHECK(cases.size() >= 30);
  for (const Case& c : cases) {
    const auto r = vitgrad(c.args);
    INFO(c.name, "\nvitgrad ", c.args, "\nstderr: ", r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(dir / "out"));  // validation fails before anything is written
  }
  // The run the cases pointed at is untouched.
  CHECK(json::parse(read_text(run / "last.json")) == good);
}

// The kernels' environment variables are read where the kernels start, each taking the values
// it knows: any other value (a typo) is refused before the command runs, not ignored.
TEST_CASE("a kernel setting in the environment that is none of its values is one line, exit 2") {
  const fs::path dir = scratch_dir("bad_kernel_settings");
  for (const std::string env : {"VITGRAD_GEMM=avx3", "VITGRAD_BF16_UNITS=amx"}) {
    const auto r = vitgrad("train " + kTiny + "--steps 1 --out " + (dir / "out").string(), env);
    INFO(env, "\nstderr: ", r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(env + " is not one of its values") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(dir / "out"));
  }
  CHECK(vitgrad("summary --depth 1 --dim 8 --heads 2", "VITGRAD_GEMM=").exit_code == 0);
}
