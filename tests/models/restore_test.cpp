// Restoring checkpoints into a live run: every malformed file is a vg::Error that names the
// file and the entry, and leaves the model, optimiser, schedule, generators and loader
// exactly as they were.
#include "models/restore.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "engine/io/json_tensor.h"
#include "engine/ops/ops.h"
#include "engine/optim/adamw.h"
#include "tests/scratch_dir.h"

using namespace vg;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

ViTConfig small_config() {
  ViTConfig c;
  c.patch_size = 14;
  c.embed_dim = 8;
  c.depth = 1;
  c.num_heads = 2;
  c.num_classes = 10;
  c.layerscale = LayerScaleSetting::fixed(1e-4);
  c.grn = true;
  c.dropout = 0.1;
  return c;
}

// A run's live objects, and one training step so that every part has state.
struct LiveRun {
  ViT model;
  optim::AdamW optimizer;
  std::optional<RunSchedule> schedule;
  data::TensorDataset data;
  data::Loader loader;

  explicit LiveRun(uint64_t seed)
      : model(small_config(), seed),
        optimizer(optim::param_groups_weight_decay(model.named_parameters(), 0.05)),
        schedule(optim::Schedule::cosine(1e-3, 10 + int64_t(seed))),
        data(data::make_synthetic("train", 20, 0)),
        loader(data, 8, true, true, seed) {
    optimizer.set_lr(schedule->lr_at(0, 1));
    data::Batch batch = loader.next();
    cross_entropy(model.forward(batch.images), batch.labels).backward();
    optimizer.step();
    optimizer.zero_grad();
  }
  RestoreTargets targets() {
    return {.model = &model,
            .optimizer = &optimizer,
            .schedule = &schedule,
            .loader = &loader,
            .dropout_rng = true};
  }
  Checkpoint snapshot() {
    Checkpoint c;
    c.config = model.config().to_json();
    c.model = model.state_dict();
    c.optimizer = optimizer.state_to_json();
    c.scheduler = schedule->to_json();
    const data::LoaderState ls = loader.state();
    c.rng = {{"dropout", rng_to_json(model.dropout_rng().state())},
             {"augment", rng_to_json(ls.augment_rng)}};
    const data::Normalisation n = data.normalisation();
    c.data = {{"epoch", ls.epoch},
              {"cursor", ls.cursor},
              {"seed", std::to_string(ls.seed)},
              {"mean", n.mean},
              {"std", n.std}};
    c.step = 1;
    return c;
  }
  // Everything restore_checkpoint may touch, as comparable text (floats as exact JSON).
  std::string fingerprint() {
    json j = snapshot().rng;
    for (const auto& [name, t] : model.state_dict()) j["model"][name] = tensor_to_json(t);
    j["optimizer"] = optimizer.state_to_json();
    j["schedule"] = schedule->to_json();
    j["loader"] = {loader.state().epoch, loader.state().cursor,
                   std::to_string(loader.state().seed)};
    return j.dump();
  }
};

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

json tensor(Shape shape, std::vector<double> data, const char* dtype = "float32") {
  return {{"shape", shape}, {"dtype", dtype}, {"data", data}};
}

struct Case {
  const char* what;
  std::function<std::string(json doc, const std::string& text)> make;  // the bad file
  const char* message;                                                 // expected after "<file>: "
};

// A case that edits the parsed document.
std::function<std::string(json, const std::string&)> edit(std::function<void(json&)> f) {
  return [f](json doc, const std::string&) {
    f(doc);
    return doc.dump();
  };
}

}  // namespace

TEST_CASE("restore_checkpoint brings back a run's state bit for bit") {
  LiveRun a(1), b(2);
  CHECK(a.fingerprint() != b.fingerprint());
  const fs::path path = vg::testing::scratch_dir("restore") / "last.json";
  save_checkpoint(path.string(), a.snapshot());
  restore_checkpoint(path.string(), b.targets());
  CHECK(a.fingerprint() == b.fingerprint());
  // and the two runs continue identically (dropout, augmentation, moments, schedule)
  for (LiveRun* run : {&a, &b}) {
    run->optimizer.set_lr(run->schedule->lr_at(1, 1));
    data::Batch batch = run->loader.next();
    cross_entropy(run->model.forward(batch.images), batch.labels).backward();
    run->optimizer.step();
  }
  CHECK(a.fingerprint() == b.fingerprint());
  fs::remove(path);
}

TEST_CASE("every malformed checkpoint names the file and the entry and changes nothing") {
  LiveRun source(1), target(2);
  const std::string good = checkpoint_to_string(source.snapshot());
  const json doc = json::parse(good);
  const fs::path path = vg::testing::scratch_dir("malformed") / "last.json";

  const Case cases[] = {
      // the file as a whole
      {"empty file", [](json, const std::string&) { return std::string(); },
       "not a valid JSON document"},
      {"truncated file", [](json, const std::string& t) { return t.substr(0, t.size() * 2 / 3); },
       "not a valid JSON document (truncated or damaged?)"},
      {"truncated by one byte",
       [](json, const std::string& t) { return t.substr(0, t.size() - 1); },
       "not a valid JSON document"},
      {"binary garbage",
       [](json, const std::string&) { return std::string("\x89PNG\r\n\x1a\n", 8); },
       "not a valid JSON document"},
      {"NaN literal in place of a number",
       [](json, const std::string& t) {
         const size_t at = t.find("\"data\":[", t.find("\"head.bias\"")) + 8;
         return t.substr(0, at) + "NaN," + t.substr(at);
       },
       "not a valid JSON document"},
      {"a top-level entry twice",
       [](json, const std::string& t) { return "{\"step\":0," + t.substr(1); },
       "key 'step' appears twice at the top level"},
      {"a weight twice (JSON would keep the last silently)",
       [](json j, const std::string& t) {
         const std::string copy = "\"head.bias\":" + j["model"]["head.bias"].dump() + ",";
         const size_t at = t.find("\"model\":{") + 9;
         return t.substr(0, at) + copy + t.substr(at);
       },
       "key 'head.bias' appears twice in 'model'"},
      {"not an object", [](json, const std::string&) { return std::string("[1,2,3]"); },
       "not a checkpoint (the document is not a JSON object)"},
      // format and version
      {"other format", edit([](json& j) { j["format"] = "safetensors"; }),
       "format is \"safetensors\", expected \"vitgrad-checkpoint\""},
      {"format missing", edit([](json& j) { j.erase("format"); }), "missing entry 'format'"},
      {"newer version", edit([](json& j) { j["version"] = 3; }),
       "version 3 is not supported (this build reads versions 1 and 2)"},
      {"version as text", edit([](json& j) { j["version"] = "1"; }),
       "version \"1\" is not supported"},
      // sections
      {"section missing", edit([](json& j) { j.erase("model"); }), "missing entry 'model'"},
      {"unknown section", edit([](json& j) { j["weights"] = json::object(); }),
       "unexpected entry 'weights'"},
      {"step negative", edit([](json& j) { j["step"] = -3; }),
       "entry 'step' is not a non-negative integer"},
      {"step not an integer", edit([](json& j) { j["step"] = 1.5; }),
       "entry 'step' is not a non-negative integer"},
      {"rng not an object", edit([](json& j) { j["rng"] = json::array(); }),
       "entry 'rng' is not an object"},
      // config
      {"config field of the wrong type", edit([](json& j) { j["config"]["depth"] = "1"; }),
       "config: ViTConfig: 'depth' must be"},
      {"config of another model", edit([](json& j) { j["config"]["depth"] = 2; }),
       "config entry 'depth' is 2, the model's is 1"},
      // model weights
      {"weight missing", edit([](json& j) { j["model"].erase("head.weight"); }),
       "model entry 'head.weight' is missing"},
      {"extra weight",
       edit([](json& j) { j["model"]["blocks.1.ls1.gamma"] = j["model"]["head.bias"]; }),
       "unexpected model entry 'blocks.1.ls1.gamma' (the model has no such parameter)"},
      {"wrong shape", edit([](json& j) {
         j["model"]["head.bias"] = tensor({4}, {1, 2, 3, 4});
       }),
       "model entry 'head.bias' has shape [4], the model's is [10]"},
      {"transposed weight", edit([](json& j) {
         j["model"]["head.weight"]["shape"] = json::array({8, 10});
       }),
       "model entry 'head.weight' has shape [8,10], the model's is [10,8]"},
      {"shape and data disagree", edit([](json& j) { j["model"]["head.bias"]["data"].erase(2); }),
       "model entry 'head.bias': data has 9 values, shape [10] needs 10"},
      {"float64 weight", edit([](json& j) { j["model"]["head.bias"]["dtype"] = "float64"; }),
       "model entry 'head.bias' is float64, the model's is float32"},
      {"unknown dtype", edit([](json& j) { j["model"]["head.bias"]["dtype"] = "bfloat16"; }),
       "model entry 'head.bias': dtype must be \"float32\" or \"float64\", got \"bfloat16\""},
      {"string in the data", edit([](json& j) { j["model"]["head.bias"]["data"][1] = "0.5"; }),
       "model entry 'head.bias': data[1] is not a number: \"0.5\""},
      {"null in the data", edit([](json& j) { j["model"]["head.bias"]["data"][0] = nullptr; }),
       "model entry 'head.bias': data[0] is not a number: null"},
      {"number beyond float32", edit([](json& j) { j["model"]["head.bias"]["data"][2] = 1e39; }),
       "model entry 'head.bias': data[2] = 1e+39 is not a finite float32"},
      {"negative dimension", edit([](json& j) { j["model"]["head.bias"]["shape"] = {-3}; }),
       "model entry 'head.bias': shape must hold non-negative integers"},
      {"tensor without dtype", edit([](json& j) { j["model"]["head.bias"].erase("dtype"); }),
       "model entry 'head.bias': missing key 'dtype'"},
      {"tensor with an extra key", edit([](json& j) { j["model"]["head.bias"]["grad"] = 0; }),
       "model entry 'head.bias': unknown key 'grad'"},
      {"tensor not an object", edit([](json& j) {
         j["model"]["head.bias"] = {1, 2, 3};
       }),
       "model entry 'head.bias': expected an object with shape, dtype and data"},
      // optimiser
      {"weights-only file into a run", edit([](json& j) { j["optimizer"] = nullptr; }),
       "entry 'optimizer' is null (a weights-only checkpoint cannot be resumed)"},
      {"another optimiser", edit([](json& j) { j["optimizer"]["name"] = "lamb"; }),
       "optimizer: adamw state: saved by optimiser \"lamb\", this is 'adamw'"},
      {"optimiser buffer of the wrong shape", edit([](json& j) {
         j["optimizer"]["state"]["head.bias"]["exp_avg"] = tensor({2}, {0, 0});
       }),
       "optimizer: adamw state 'head.bias'.exp_avg is float32 [2], the parameter is float32 [10]"},
      {"optimiser state of a parameter missing",
       edit([](json& j) { j["optimizer"]["state"].erase("head.weight"); }),
       "optimizer: adamw state: missing parameter 'head.weight'"},
      {"optimiser hyper-parameter not a number",
       edit([](json& j) { j["optimizer"]["groups"][1]["lr"] = "1e-3"; }),
       "optimizer: adamw state: group 'decay': lr must be a number, got \"1e-3\""},
      {"optimiser moment holds a string",
       edit([](json& j) { j["optimizer"]["state"]["head.bias"]["exp_avg_sq"]["data"][0] = "x"; }),
       "optimizer: adamw state 'head.bias'.exp_avg_sq: data[0] is not a number"},
      // schedule
      {"unknown schedule", edit([](json& j) { j["scheduler"]["kind"] = "onecycle"; }),
       "scheduler: schedule: unknown kind 'onecycle'"},
      {"schedule field missing", edit([](json& j) { j["scheduler"].erase("t_initial"); }),
       "scheduler: schedule: missing field 't_initial'"},
      {"weights-only file without schedule", edit([](json& j) { j["scheduler"] = nullptr; }),
       "entry 'scheduler' is null"},
      // generators
      {"dropout generator missing", edit([](json& j) { j["rng"].erase("dropout"); }),
       "rng entry 'dropout' is missing"},
      {"generator word not hex",
       edit([](json& j) { j["rng"]["augment"]["s"][2] = "0123456789abcdeg"; }),
       "rng entry 'augment': s[2] is not hex"},
      {"generator state all zero", edit([](json& j) {
         j["rng"]["dropout"]["s"] = std::vector<std::string>(4, std::string(16, '0'));
       }),
       "rng entry 'dropout': s is all zero"},
      {"unknown generator", edit([](json& j) { j["rng"]["mixup"] = j["rng"]["dropout"]; }),
       "unexpected rng entry 'mixup'"},
      // loader position
      {"cursor past the data set", edit([](json& j) { j["data"]["cursor"] = 20; }),
       "data: Loader(synthetic/train): saved cursor 20 out of range [0, 20)"},
      {"epoch not a number", edit([](json& j) { j["data"]["epoch"] = "one"; }),
       "data entry 'epoch' must be an integer >= 0, got \"one\""},
      {"seed not a decimal", edit([](json& j) { j["data"]["seed"] = "12x"; }),
       "data entry 'seed' must be a decimal uint64 in a string, got \"12x\""},
      {"seed as a number", edit([](json& j) { j["data"]["seed"] = 12; }),
       "data entry 'seed' must be a decimal uint64 in a string, got 12"},
      {"unknown loader entry", edit([](json& j) { j["data"]["shuffle"] = true; }),
       "unexpected data entry 'shuffle'"},
      {"std without mean", edit([](json& j) { j["data"].erase("mean"); }),
       "data entry 'mean' is missing (entry 'std' is there)"},
      {"mean not a list", edit([](json& j) { j["data"]["mean"] = 0.286; }),
       "data entry 'mean' must be a non-empty list of numbers, got 0.286"},
      {"a std of zero", edit([](json& j) { j["data"]["std"] = {0.0}; }),
       "the normalisation of channel 0 (mean 0.286, std 0)"},
      {"mean and std of other lengths", edit([](json& j) {
         j["data"]["mean"] = {0.2, 0.3};
       }),
       "data entries 'mean' (2 values) and 'std' (1) differ in length"},
      {"another normalisation than the data's", edit([](json& j) { j["data"]["mean"] = {0.5}; }),
       "the data was normalised with mean [0.5] std [0.353], the loader's data set "
       "'synthetic/train' with mean [0.286] std [0.353]"},
  };

  const std::string before = target.fingerprint();
  for (const Case& c : cases) {
    INFO("case: ", std::string(c.what));
    write_text(path, c.make(doc, good));
    const std::string expected = path.string() + ": ";
    std::string message;
    try {
      restore_checkpoint(path.string(), target.targets());
    } catch (const Error& e) {
      message = e.what();
    }
    INFO("message: ", message);
    CHECK(message.rfind(expected, 0) == 0);  // names the file first
    CHECK(message.find(c.message) != std::string::npos);
    CHECK(target.fingerprint() == before);  // nothing changed
  }

  // The untouched document restores, so each failure above came from its one edit.
  write_text(path, good);
  restore_checkpoint(path.string(), target.targets());
  CHECK(target.fingerprint() == source.fingerprint());
  fs::remove(path);
}

TEST_CASE("a weights-only checkpoint restores a model and nothing else") {
  LiveRun a(1);
  const Checkpoint full = a.snapshot();
  const Checkpoint weights = weights_only(full, "run.json", false);
  CHECK(weights.optimizer.is_null());
  CHECK(weights.scheduler.is_null());
  CHECK(weights.rng.empty());
  // Of the data section only the normalisation stays: evaluation needs it.
  CHECK(weights.data == json{{"mean", {0.286}}, {"std", {0.353}}});
  CHECK(checkpoint_normalisation(weights, "w.json") == a.data.normalisation());
  CHECK(weights.config == full.config);
  ViT fresh(small_config(), 7);
  restore_checkpoint(weights, "w.json", {.model = &fresh});
  for (const auto& [name, t] : a.model.state_dict())
    CHECK(std::memcmp(t.raw_data(), fresh.state_dict().at(name).raw_data(), t.numel() * 4) == 0);
  CHECK_THROWS_WITH_AS(weights_only(full, "run.json", true),
                       doctest::Contains("run.json: extra entry 'ema' is missing"), Error);
}
