#include "layers/module.h"

#include <doctest/doctest.h>

#include "layers/layer_scale.h"
#include "layers/linear.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::nn::Module;

namespace {

// A two-level tree: an own parameter, a Linear "inner" and, below "stage", a LayerScale.
class Stage : public Module {
 public:
  Stage() : Module("Stage") {
    scale = register_module("scale", std::make_shared<nn::LayerScale>(2, 0.5));
  }
  Tensor forward(const Tensor& x) override { return (*scale)(x); }
  std::shared_ptr<nn::LayerScale> scale;
};

class Toy : public Module {
 public:
  Toy() : Module("Toy") {
    Rng rng(1);
    offset = register_parameter("offset", full({2}, 3.0), {.no_weight_decay = true});
    inner = register_module("inner", std::make_shared<nn::Linear>(3, 2, true, rng));
    stage = register_module("stage", std::make_shared<Stage>());
  }
  // x (..., 3) -> stage(inner(x)) + offset.
  Tensor forward(const Tensor& x) override { return add((*stage)((*inner)(x)), offset); }
  Tensor offset;
  std::shared_ptr<nn::Linear> inner;
  std::shared_ptr<Stage> stage;
  void add_twice() { register_parameter("offset", zeros({1})); }
};

std::vector<double> values(const Tensor& t) {
  return t.to_vector();
}

}  // namespace

TEST_CASE("Module names parameters and submodules with dotted paths, in registration order") {
  Toy toy;
  std::vector<std::string> names;
  for (const Parameter& p : toy.named_parameters()) names.push_back(p.name);
  CHECK(names ==
        std::vector<std::string>{"offset", "inner.weight", "inner.bias", "stage.scale.gamma"});
  std::vector<std::string> paths;
  for (const auto& [path, m] : toy.named_modules()) paths.push_back(path + ":" + m->type_name());
  CHECK(paths ==
        std::vector<std::string>{":Toy", "inner:Linear", "stage:Stage", "stage.scale:LayerScale"});
  CHECK(toy.num_parameters() == 2 + 6 + 2 + 2);
  CHECK(toy.parameters().size() == 4);
  for (const Tensor& p : toy.parameters()) CHECK(p.requires_grad());
  CHECK_THROWS_WITH_AS(toy.add_twice(), "Toy: parameter 'offset' registered twice", Error);
}

TEST_CASE("train() and eval() reach every descendant") {
  Toy toy;
  toy.eval();
  for (const auto& [path, m] : toy.named_modules()) CHECK_MESSAGE(!m->is_training(), path);
  toy.train();
  for (const auto& [path, m] : toy.named_modules()) CHECK_MESSAGE(m->is_training(), path);
}

TEST_CASE("to(float64) converts every parameter in place and zero_grad drops gradients") {
  Toy toy;
  const Tensor gamma = toy.named_parameters()[3].tensor;  // a handle taken before
  toy.to(DType::f64);
  for (const Parameter& p : toy.named_parameters()) CHECK(p.tensor.dtype() == DType::f64);
  CHECK(gamma.dtype() == DType::f64);
  CHECK(values(gamma) == std::vector<double>{0.5, 0.5});
  sum(mul(gamma, 2.0)).backward();
  CHECK(values(gamma.grad()) == std::vector<double>{2, 2});
  toy.zero_grad();
  CHECK(!gamma.grad().defined());
}

TEST_CASE("state_dict and load_state_dict round-trip the values under the dotted names") {
  Toy source, target;
  Tensor offset = source.named_parameters()[0].tensor;
  offset.set_at({1}, -7.0);
  const nn::StateDict state = source.state_dict();
  CHECK(state.size() == 4);
  CHECK(state.begin()->first == "inner.bias");  // sorted by name, as checkpoints are
  target.load_state_dict(state);
  CHECK(values(target.named_parameters()[0].tensor) == std::vector<double>{3, -7});
  // A float64 state loads into float32 parameters (converted).
  nn::StateDict wide = state;
  wide["offset"] = full({2}, 0.25, DType::f64);
  target.load_state_dict(wide);
  CHECK(target.named_parameters()[0].tensor.dtype() == DType::f32);
  CHECK(values(target.named_parameters()[0].tensor) == std::vector<double>{0.25, 0.25});
}

TEST_CASE(
    "load_state_dict is strict: a missing, extra or misshaped entry is named, nothing changes") {
  Toy toy;
  const std::vector<double> offset_before = values(toy.named_parameters()[0].tensor);
  nn::StateDict state = Toy().state_dict();
  state["offset"] = full({2}, 9.0);

  nn::StateDict missing = state;
  missing.erase("stage.scale.gamma");
  CHECK_THROWS_WITH_AS(toy.load_state_dict(missing),
                       "Toy.load_state_dict: missing entry 'stage.scale.gamma'", Error);
  nn::StateDict extra = state;
  extra["stage.scale.beta"] = zeros({2});
  CHECK_THROWS_WITH_AS(toy.load_state_dict(extra),
                       "Toy.load_state_dict: unexpected entry 'stage.scale.beta'", Error);
  nn::StateDict misshaped = state;
  misshaped["inner.weight"] = zeros({3, 2});
  CHECK_THROWS_WITH_AS(toy.load_state_dict(misshaped),
                       "Toy.load_state_dict: entry 'inner.weight' has shape [3,2], expected [2,3]",
                       Error);
  // Every failed load left the module as it was (offset comes first and was valid).
  CHECK(values(toy.named_parameters()[0].tensor) == offset_before);
  // Non-strict loads what is there and skips the rest; shapes are still checked.
  toy.load_state_dict(missing, /*strict=*/false);
  CHECK(values(toy.named_parameters()[0].tensor) == std::vector<double>{9, 9});
  CHECK_THROWS_AS(toy.load_state_dict(misshaped, false), Error);
}

TEST_CASE("Calling a module records its ops under its path; forward alone adds no scope") {
  Toy toy;
  const Tensor y = toy(ones({4, 3}));
  // add (the root, path "") <- stage.scale's channel_affine <- inner's linear.
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->module == "");
  const auto& scaled = y.grad_fn()->inputs[0].node;
  REQUIRE(scaled);
  CHECK(scaled->module == "stage.scale");
  REQUIRE(scaled->inputs[0].node);
  CHECK(scaled->inputs[0].node->module == "inner");
  CHECK(current_module_path().empty());
}

TEST_CASE("ForwardTrace notes each module call: path, type, output shape and FLOPs as run") {
  Toy toy;
  nn::ForwardTrace trace;
  toy(ones({4, 3}));
  // inner: 2*4*3*2 + 4*2 (bias) = 56; stage.scale: one multiply per element, 8; the root's
  // add of offset: 8 more.
  std::vector<std::string> seen;
  for (const auto& call : trace.calls())
    seen.push_back(
        cat_str(call.path, ":", call.type, ":", shape_str(call.output), ":", call.flops));
  CHECK(seen == std::vector<std::string>{":Toy:[4,2]:72", "inner:Linear:[4,2]:56",
                                         "stage:Stage:[4,2]:8", "stage.scale:LayerScale:[4,2]:8"});
  // A forward outside any trace notes nothing.
  const size_t calls = trace.calls().size();
  {
    nn::ForwardTrace inner_trace;
    toy(ones({1, 3}));
    CHECK(inner_trace.calls().size() == 4);
  }
  CHECK(trace.calls().size() == calls);
}
