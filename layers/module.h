// Module: the base of every layer and model. A module owns named parameters and child
// modules, in registration order, and knows its own name inside its parent, so the ops it
// runs are recorded with their module path ("blocks.2.attn") for anomaly reports and graphs.
//
// A subclass registers what it owns in its constructor:
//   gamma_ = register_parameter("gamma", full({dim}, init_value), {.no_weight_decay = true});
//   attn_ = register_module("attn", std::make_shared<Attention>(...));
// and says what it computes in `forward`. Modules are called as `module(x)` (PyTorch's
// __call__): that runs forward inside the module's scope, so the ops it records carry its
// path, and a ForwardTrace sees what it ran.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/core/parameter.h"
#include "engine/core/tensor.h"

namespace vg::nn {

struct ParameterTags {
  bool no_weight_decay = false;
};

// Name -> tensor, sorted by name (the order JSON checkpoints use).
using StateDict = std::map<std::string, Tensor>;

// While alive, notes on its thread every module call (module(x) or run): the module's path,
// type, output shape and forward FLOPs (as the ops count them at run time, its children's
// included). `vitgrad summary` builds its table from one traced forward pass, so the table
// shows what the code ran.
class ForwardTrace {
 public:
  struct Call {
    std::string path, type;
    Shape output;
    double flops = 0;
  };
  ForwardTrace();
  ~ForwardTrace();
  ForwardTrace(const ForwardTrace&) = delete;
  ForwardTrace& operator=(const ForwardTrace&) = delete;
  const std::vector<Call>& calls() const { return calls_; }  // in the order they began

 private:
  friend class Module;
  ForwardTrace* previous_;
  std::vector<Call> calls_;
};

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // "LayerScale", "Block", ...: the class, for summaries and messages.
  const std::string& type_name() const { return type_name_; }
  // The name under which the parent registered this module ("" for a root).
  const std::string& name() const { return name_; }

  // Every parameter of this module and its children, depth first, with dotted names.
  ParameterList named_parameters() const;
  std::vector<Tensor> parameters() const;
  // This module ("") and every descendant with its dotted path.
  std::vector<std::pair<std::string, const Module*>> named_modules() const;
  std::vector<std::pair<std::string, Module*>> named_modules();
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }
  int64_t num_parameters() const;

  void train(bool on = true);  // recursive; affects Dropout, DropPath
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();  // drops every parameter's gradient
  // Converts every parameter in place (float64 for gradient checks); every handle to a
  // parameter sees the new dtype.
  void to(DType dtype);

  // What the module computes (each layer documents its shapes). Call `module(x)` rather
  // than forward(x) from a parent, so that the ops are recorded under the module's path.
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) {
    return run([&] { return forward(x); });
  }
  // Runs `body` as this module (its path scope open): operator() for forwards that take
  // more than one argument, e.g. `block.run([&] { return block.forward(x, aux, &extra); })`.
  Tensor run(const std::function<Tensor()>& body) const;

  StateDict state_dict() const;
  // Copies values into the existing parameters. Strict: a missing, extra or misshaped entry
  // is a vg::Error naming it, and nothing is changed unless every entry is valid.
  void load_state_dict(const StateDict& state, bool strict = true);

 protected:
  Tensor register_parameter(const std::string& name, Tensor value, ParameterTags tags = {});
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  // Replaces a registered child.
  void replace_module(const std::string& name, std::shared_ptr<Module> module);
  // Registers a child right after the child `after`, keeping the order that names and
  // summaries follow (e.g. LayerScale inserted into a built block).
  void insert_module_after(const std::string& after, const std::string& name,
                           std::shared_ptr<Module> module);

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void collect_parameters(const std::string& prefix, ParameterList& out) const;

  struct Entry {
    std::string name;
    Tensor tensor;
    ParameterTags tags;
  };
  std::string type_name_;
  std::string name_;
  bool training_ = true;
  std::vector<Entry> parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace vg::nn
