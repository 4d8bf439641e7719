#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "engine/core/error.h"
#include "engine/io/json_tensor.h"
#include "engine/optim/adamw.h"
#include "engine/optim/lamb.h"
#include "engine/optim/schedule.h"
#include "engine/optim/sgd.h"
#include "tests/engine/optim_helpers.h"

using namespace vg;
using namespace vg::optim;
using namespace vg::testing;
using nlohmann::json;

namespace {

// A float32 "model": what a ViT's named_parameters() would hand over.
ParameterList fresh_params() {
  return {random_param("blocks.0.attn.qkv.weight", {6, 4}, 1, false, DType::f32),
          random_param("blocks.0.ls1.gamma", {4}, 2, true, DType::f32),
          random_param("head.bias", {3}, 3, true, DType::f32)};
}

// The parameters as a checkpoint would bring them back: new tensors, the same bits.
ParameterList reloaded(const ParameterList& params) {
  ParameterList out = params;
  for (Parameter& p : out)
    p.tensor =
        tensor_from_json(json::parse(tensor_to_json(p.tensor).dump()), p.name).set_requires_grad();
  return out;
}

// A deterministic stand-in for backward() at step t.
void fake_backward(ParameterList& params, int64_t t) {
  for (Parameter& p : params) {
    Tensor g = Tensor::empty(p.tensor.shape(), DType::f32);
    const float* w = p.tensor.data<float>();
    float* d = g.data<float>();
    for (int64_t i = 0; i < g.numel(); ++i)
      d[i] = std::sin(w[i] * float(t + 1)) * 3.0f + 0.1f * float(t);
    p.tensor.set_grad(g);
  }
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& kind, const ParameterList& params) {
  auto groups = param_groups_weight_decay(params, 0.05);
  if (kind == "sgd") return std::make_unique<SGD>(groups, 0.9, 0.0, true);
  if (kind == "adamw") return std::make_unique<AdamW>(groups);
  return std::make_unique<Lamb>(groups);  // max_grad_norm 1: the clip is active
}

void train(Optimizer& opt, ParameterList& params, int64_t t0, int64_t t1) {
  const Schedule schedule = Schedule::cosine(1e-2, 6, 1e-4, 2, 1e-3);
  for (int64_t t = t0; t < t1; ++t) {
    fake_backward(params, t);
    opt.set_lr(schedule.lr(t));
    opt.step();
    opt.zero_grad();
  }
}

}  // namespace

TEST_CASE("optimiser state JSON round trip: 3 + save/load + 3 steps == 6 steps, bit for bit") {
  for (const std::string kind : {"sgd", "adamw", "lamb"}) {
    INFO("optimiser ", kind);
    ParameterList straight = fresh_params();
    auto opt_a = make_optimizer(kind, straight);
    train(*opt_a, straight, 0, 6);

    ParameterList first = fresh_params();
    auto opt_b = make_optimizer(kind, first);
    train(*opt_b, first, 0, 3);
    const std::string saved = opt_b->state_to_json().dump();

    ParameterList resumed = reloaded(first);  // a fresh model and a fresh optimiser
    auto opt_c = make_optimizer(kind, resumed);
    opt_c->load_state_json(json::parse(saved));
    CHECK(opt_c->step_count() == 3);
    CHECK(opt_c->state_to_json().dump() == saved);
    train(*opt_c, resumed, 3, 6);
    CHECK(opt_c->step_count() == 6);
    for (size_t i = 0; i < straight.size(); ++i) {
      INFO("parameter ", straight[i].name);
      CHECK(same_bits(resumed[i].tensor, straight[i].tensor));
    }
    CHECK(opt_c->state_to_json() == opt_a->state_to_json());
  }
}

TEST_CASE("optimiser state JSON is plain data keyed by parameter name") {
  ParameterList params = fresh_params();
  SGD sgd(param_groups_weight_decay(params, 0.05), 0.9);
  json j = sgd.state_to_json();
  CHECK(j["name"] == "sgd");
  CHECK(j["step"] == 0);
  CHECK(j["state"]["head.bias"]["momentum_buffer"].is_null());  // made on the first step
  REQUIRE(j["groups"].size() == 2);
  CHECK(j["groups"][0]["name"] == "no_decay");
  CHECK(j["groups"][0]["params"] == json::array({"blocks.0.ls1.gamma", "head.bias"}));
  CHECK(j["groups"][1]["weight_decay"] == 0.05);
  CHECK(j["groups"][1]["options"]["momentum"] == 0.9);

  AdamW adamw(param_groups_weight_decay(params, 0.05));
  train(adamw, params, 0, 2);
  j = adamw.state_to_json();
  CHECK(j["step"] == 2);
  CHECK(j["state"]["blocks.0.attn.qkv.weight"]["step"] == 2);
  CHECK(j["state"]["blocks.0.attn.qkv.weight"]["exp_avg"]["shape"] == json::array({6, 4}));
  CHECK(j["state"]["head.bias"]["exp_avg_sq"]["dtype"] == "float32");
}

TEST_CASE("load_state_json rejects every malformed entry and leaves everything untouched") {
  ParameterList params = fresh_params();
  AdamW opt(param_groups_weight_decay(params, 0.05));
  train(opt, params, 0, 1);
  const json older = opt.state_to_json();  // valid, but different from the current state
  train(opt, params, 1, 2);
  const json before = opt.state_to_json();
  std::vector<Tensor> values_before;
  for (const Parameter& p : params) values_before.push_back(p.tensor.clone());

  const auto fails = [&](const std::function<void(json&)>& mutate, const char* expected) {
    json bad = older;
    mutate(bad);
    INFO("expected an error containing: ", expected);
    CHECK_THROWS_WITH_AS(opt.load_state_json(bad), doctest::Contains(expected), Error);
    CHECK(opt.state_to_json() == before);
    for (size_t i = 0; i < params.size(); ++i) CHECK(same_bits(params[i].tensor, values_before[i]));
  };
  fails([](json& j) { j["state"]["blocks.9.fc.weight"] = j["state"]["head.bias"]; },
        "unknown parameter 'blocks.9.fc.weight'");
  fails([](json& j) { j["state"].erase("head.bias"); }, "missing parameter 'head.bias'");
  fails([](json& j) { j["state"]["head.bias"]["exp_avg"] = tensor_to_json(zeros({4})); },
        "'head.bias'.exp_avg is float32 [4], the parameter is float32 [3]");
  fails(
      [](json& j) { j["state"]["head.bias"]["exp_avg"] = tensor_to_json(zeros({3}, DType::f64)); },
      "'head.bias'.exp_avg is float64 [3]");
  fails([](json& j) { j["state"]["head.bias"]["exp_avg_sq"]["data"][1] = "NaN"; },
        "'head.bias'.exp_avg_sq: data[1] is not a number");
  fails([](json& j) { j["state"]["head.bias"]["momentum"] = nullptr; },
        "'head.bias': unknown key 'momentum'");
  fails([](json& j) { j["state"]["head.bias"].erase("exp_avg"); },
        "'head.bias': missing key 'exp_avg'");
  fails([](json& j) { j["state"]["head.bias"]["step"] = -1; }, "'head.bias': step");
  fails([](json& j) { j["name"] = "lamb"; }, "saved by optimiser \"lamb\"");
  fails([](json& j) { j["step"] = 1.5; }, "step must be an integer");
  fails([](json& j) { j["groups"].erase(0); }, "groups must be an array of 2");
  fails([](json& j) { j["groups"][1]["params"].push_back("ghost"); },
        "saved parameter 'ghost' is not in this group");
  fails([](json& j) { j["groups"][0]["params"].erase(1); },
        "parameter 'head.bias' is missing from the saved group");
  fails([](json& j) { j["groups"][1]["options"]["beta3"] = 0.5; }, "unknown key 'beta3'");
  fails([](json& j) { j["groups"][1]["options"]["beta1"] = 1.5; }, "beta1 must be in [0, 1)");
  fails([](json& j) { j["groups"][1]["lr"] = "fast"; }, "lr must be a number");
  fails([](json& j) { j["groups"][0]["name"] = "all"; }, "groups[0] is named \"all\"");
  fails([](json& j) { j["extra"] = 1; }, "unknown key 'extra'");
  fails([](json& j) { j = json::array(); }, "expected an object");

  opt.load_state_json(older);  // the unmutated document loads
  CHECK(opt.state_to_json() == older);
}
