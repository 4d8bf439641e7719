#include "layers/module.h"

#include <cstring>
#include <utility>

namespace vg::nn {
namespace {

thread_local ForwardTrace* t_trace = nullptr;

}  // namespace

ForwardTrace::ForwardTrace() : previous_(t_trace) {
  t_trace = this;
}
ForwardTrace::~ForwardTrace() {
  t_trace = previous_;
}

Tensor Module::register_parameter(const std::string& name, Tensor value, ParameterTags tags) {
  check(value.defined(), type_name_, ": parameter '", name, "' is undefined");
  for (const Entry& e : parameters_)
    check(e.name != name, type_name_, ": parameter '", name, "' registered twice");
  value.set_requires_grad(true);
  value.set_name(name);
  parameters_.push_back({name, value, tags});
  return value;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check(module != nullptr, type_name_, ": child module '", name, "' is null");
  for (const auto& [n, m] : children_)
    check(n != name, type_name_, ": child module '", name, "' registered twice");
  module->name_ = name;
  children_.emplace_back(name, std::move(module));
}

void Module::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  for (auto& [n, m] : children_) {
    if (n != name) continue;
    module->name_ = name;
    module->train(training_);
    m = std::move(module);
    return;
  }
  throw Error(cat_str(type_name_, ": no child module '", name, "' to replace"));
}

void Module::insert_module_after(const std::string& after, const std::string& name,
                                 std::shared_ptr<Module> module) {
  add_child(name, module);  // validates and names it, at the end
  auto added = std::move(children_.back());
  children_.pop_back();
  for (auto it = children_.begin(); it != children_.end(); ++it)
    if (it->first == after) {
      children_.insert(it + 1, std::move(added));
      return;
    }
  throw Error(cat_str(type_name_, ": no child module '", after, "' to insert after"));
}

Tensor Module::run(const std::function<Tensor()>& body) const {
  ModuleScope scope(name_);
  ForwardTrace* trace = t_trace;
  if (!trace) return body();
  const size_t index = trace->calls_.size();
  trace->calls_.push_back({current_module_path(), type_name_, {}, 0});
  FlopCounter flops;  // nested: the children's counts reach it, and it reaches the caller's
  Tensor y = body();
  trace->calls_[index].output = y.shape();
  trace->calls_[index].flops = flops.total();
  return y;
}

void Module::collect_parameters(const std::string& prefix, ParameterList& out) const {
  for (const Entry& e : parameters_)
    out.push_back({prefix + e.name, e.tensor, e.tags.no_weight_decay});
  for (const auto& [n, m] : children_) m->collect_parameters(prefix + n + ".", out);
}

ParameterList Module::named_parameters() const {
  ParameterList out;
  collect_parameters("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (const Parameter& p : named_parameters()) out.push_back(p.tensor);
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out{{"", this}};
  for (const auto& [n, m] : children_)
    for (const auto& [sub, mod] : m->named_modules())
      out.emplace_back(sub.empty() ? n : n + "." + sub, mod);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  for (const auto& [path, m] : std::as_const(*this).named_modules())
    out.emplace_back(path, const_cast<Module*>(m));
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Parameter& p : named_parameters()) n += p.tensor.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, m] : children_) m->train(on);
}

void Module::zero_grad() {
  for (Parameter& p : named_parameters()) p.tensor.zero_grad();
}

void Module::to(DType dtype) {
  for (Parameter& p : named_parameters()) {
    if (p.tensor.dtype() == dtype) continue;
    Tensor converted = p.tensor.detach().to(dtype);
    TensorImpl* impl = p.tensor.impl();
    impl->storage = converted.impl()->storage;
    impl->dtype = dtype;
    impl->grad = Tensor();
  }
}

StateDict Module::state_dict() const {
  StateDict out;
  for (const Parameter& p : named_parameters()) out[p.name] = p.tensor;
  return out;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  const ParameterList params = named_parameters();
  // Validate everything first: a failed load leaves the module untouched.
  for (const Parameter& p : params) {
    auto it = state.find(p.name);
    if (it == state.end()) {
      check(!strict, type_name_, ".load_state_dict: missing entry '", p.name, "'");
      continue;
    }
    const Tensor& v = it->second;
    check(v.defined() && v.shape() == p.tensor.shape(), type_name_, ".load_state_dict: entry '",
          p.name, "' has shape ", v.defined() ? shape_str(v.shape()) : "undefined", ", expected ",
          p.tensor.shape());
  }
  if (strict) {
    for (const auto& [name, v] : state) {
      bool known = false;
      for (const Parameter& p : params) known = known || p.name == name;
      check(known, type_name_, ".load_state_dict: unexpected entry '", name, "'");
    }
  }
  for (const Parameter& p : params) {
    auto it = state.find(p.name);
    if (it == state.end()) continue;
    Tensor value = it->second.dtype() == p.tensor.dtype()
                       ? it->second
                       : it->second.detach().to(p.tensor.dtype());
    std::memcpy(p.tensor.raw_data(), value.raw_data(),
                p.tensor.numel() * dtype_size(p.tensor.dtype()));
  }
}

}  // namespace vg::nn
