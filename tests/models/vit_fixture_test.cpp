// The ViT against PyTorch: tests/fixtures/vit.json holds small ViTs written out in plain
// PyTorch with timm's semantics and names (make_vit_fixtures.py), their weights, a batch,
// the logits, the cross-entropy loss and every parameter's gradient.
#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "models/vit.h"
#include "tests/engine/fixture_helpers.h"

using namespace vg;
using vg::testing::expect_close;
using vg::testing::fixture_tensor;
using vg::testing::load_fixture;

namespace {

// The case's model in `dtype` with the fixture's weights, loaded strictly: every timm name
// must exist in the model and the reverse.
std::unique_ptr<ViT> load_model(const nlohmann::json& c, DType dtype) {
  auto model = std::make_unique<ViT>(ViTConfig::from_json(c.at("config")));
  model->to(dtype);
  nn::StateDict state;
  for (const auto& [name, entry] : c.at("weights").items())
    state[name] = fixture_tensor(entry, dtype);
  model->load_state_dict(state);
  model->eval();
  return model;
}

}  // namespace

TEST_CASE("ViT float32 forward and loss match PyTorch to 1e-5") {
  const nlohmann::json fixture = load_fixture("vit.json");
  REQUIRE(fixture.at("cases").size() == 3);
  for (const nlohmann::json& c : fixture.at("cases")) {
    const std::string name = c.at("name");
    INFO("case: ", name);
    auto model = load_model(c, DType::f32);
    const Tensor logits = (*model)(fixture_tensor(c.at("images"), DType::f32));
    expect_close(name + " logits", logits, c.at("logits"), 1e-5);
    const Tensor loss = cross_entropy(logits, c.at("labels").get<std::vector<int32_t>>(),
                                      c.at("label_smoothing").get<double>());
    CHECK(loss.item() == doctest::Approx(c.at("loss").get<double>()).epsilon(1e-5));
  }
}

TEST_CASE("ViT float64 logits, loss and every parameter gradient match PyTorch to 1e-10") {
  const nlohmann::json fixture = load_fixture("vit.json");
  for (const nlohmann::json& c : fixture.at("cases")) {
    const std::string name = c.at("name");
    INFO("case: ", name);
    auto model = load_model(c, DType::f64);
    const Tensor logits = (*model)(fixture_tensor(c.at("images"), DType::f64));
    expect_close(name + " logits", logits, c.at("logits"), 1e-12);
    const Tensor loss = cross_entropy(logits, c.at("labels").get<std::vector<int32_t>>(),
                                      c.at("label_smoothing").get<double>());
    CHECK(loss.item() == doctest::Approx(c.at("loss").get<double>()).epsilon(1e-12));
    loss.backward();
    const nlohmann::json& grads = c.at("grads");
    const ParameterList params = model->named_parameters();
    CHECK(params.size() == grads.size());
    for (const Parameter& p : params) {
      REQUIRE_MESSAGE(grads.contains(p.name), "no PyTorch gradient for ", p.name);
      expect_close(name + " d " + p.name, p.tensor.grad(), grads.at(p.name), 1e-10);
    }
  }
}
