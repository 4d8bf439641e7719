// Parity with PyTorch: ten steps of a tiny MLP under SGD (nesterov), AdamW with a timm cosine
// warmup and timm-semantics LAMB, in float64 (tests/fixtures/make_optim_fixtures.py).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/io/json_tensor.h"
#include "engine/ops/ops.h"
#include "engine/optim/adamw.h"
#include "engine/optim/lamb.h"
#include "engine/optim/schedule.h"
#include "engine/optim/sgd.h"
#include "tests/engine/fixture_helpers.h"

using namespace vg;
using namespace vg::optim;
using nlohmann::json;

namespace {

struct Model {
  ParameterList params;
  Tensor x;
  std::vector<int32_t> labels;

  const Tensor& get(const char* name) const {
    for (const Parameter& p : params)
      if (p.name == name) return p.tensor;
    FAIL("no parameter ", name);
    return params[0].tensor;
  }
  Tensor loss() const {
    const Tensor h = tanh(linear(x, get("fc1.weight"), get("fc1.bias")));
    return cross_entropy(linear(h, get("fc2.weight"), get("fc2.bias")), labels);
  }
};

Model load_model(const json& fixture) {
  Model m;
  m.x = tensor_from_json(fixture["x"], "x");
  m.labels = fixture["labels"].get<std::vector<int32_t>>();
  const auto no_decay = fixture["no_weight_decay"].get<std::vector<std::string>>();
  for (const auto& name : fixture["names"].get<std::vector<std::string>>()) {
    Parameter p;
    p.name = name;
    p.tensor = tensor_from_json(fixture["init"][name], name).set_requires_grad();
    p.no_weight_decay = std::find(no_decay.begin(), no_decay.end(), name) != no_decay.end();
    m.params.push_back(p);
  }
  return m;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& kind, const json& cfg,
                                          const ParameterList& params) {
  auto groups = param_groups_weight_decay(params, cfg["weight_decay"].get<double>());
  if (kind == "sgd")
    return std::make_unique<SGD>(groups, cfg["momentum"].get<double>(), 0.0,
                                 cfg["nesterov"].get<bool>());
  const double beta1 = cfg["betas"][0], beta2 = cfg["betas"][1], eps = cfg["eps"];
  if (kind == "adamw") return std::make_unique<AdamW>(groups, beta1, beta2, eps);
  return std::make_unique<Lamb>(groups, beta1, beta2, eps, cfg["max_grad_norm"].get<double>());
}

Schedule make_schedule(const std::string& kind, const json& cfg) {
  if (kind != "adamw") return Schedule::constant(cfg["lr"].get<double>());
  return Schedule::cosine(cfg["lr"].get<double>(), cfg["t_initial"].get<int64_t>(),
                          cfg["min_lr"].get<double>(), cfg["warmup_t"].get<int64_t>(),
                          cfg["warmup_lr_init"].get<double>());
}

double rel_err(double got, double want) {
  return std::fabs(got - want) / std::max(1e-300, std::fabs(want));
}

}  // namespace

TEST_CASE("SGD, AdamW (cosine warmup) and LAMB match PyTorch over ten float64 steps") {
  const json fixture = vg::testing::load_fixture("optim.json");
  for (const std::string kind : {"sgd", "adamw", "lamb"}) {
    INFO("optimiser ", kind);
    const json& run = fixture["runs"][kind];
    Model model = load_model(fixture);
    auto opt = make_optimizer(kind, run["config"], model.params);
    const Schedule schedule = make_schedule(kind, run["config"]);
    double worst_loss = 0, worst_lr = 0;
    for (int64_t t = 0; t < int64_t(run["losses"].size()); ++t) {
      opt->set_lr(schedule.lr(t));
      worst_lr = std::max(worst_lr, rel_err(opt->groups()[0].lr, run["lrs"][t].get<double>()));
      opt->zero_grad();
      Tensor loss = model.loss();
      loss.backward();
      worst_loss = std::max(worst_loss, rel_err(loss.item(), run["losses"][t].get<double>()));
      opt->step();
      if (kind == "lamb")  // the global norm LAMB measured before its in-place clip
        CHECK(rel_err(dynamic_cast<Lamb&>(*opt).last_grad_norm(),
                      run["grad_norms"][t].get<double>()) < 1e-10);
    }
    MESSAGE(kind, ": worst relative error of the losses ", worst_loss);
    CHECK(worst_lr < 1e-14);
    CHECK(worst_loss < 1e-10);  // float64 end to end: far inside the 1e-6 contract
    double worst_param = 0;
    for (const Parameter& p : model.params) {
      const std::vector<double> got = p.tensor.to_vector();
      const auto want = run["final"][p.name]["data"].get<std::vector<double>>();
      for (size_t i = 0; i < got.size() && i < want.size(); ++i)
        worst_param = std::max(worst_param, rel_err(got[i], want[i]));
      vg::testing::expect_close(kind + " final " + p.name, p.tensor, run["final"][p.name], 1e-10);
      // LAMB leaves the clipped gradients behind: compare them too
      vg::testing::expect_close(kind + " final grad " + p.name, p.tensor.grad(),
                                run["final_grads"][p.name], 1e-10);
    }
    MESSAGE(kind, ": worst relative error of the final parameters ", worst_param);
  }
}
