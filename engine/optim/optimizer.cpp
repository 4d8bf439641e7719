#include "engine/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/io/json_tensor.h"

namespace vg::optim {
namespace {

using nlohmann::json;

// Checks that `j` is an object with exactly `keys`.
void check_exact_keys(const json& j, const std::string& where,
                      const std::vector<std::string>& keys) {
  check(j.is_object(), where, ": expected an object, got ", j.type_name());
  for (const auto& [key, value] : j.items())
    check(std::find(keys.begin(), keys.end(), key) != keys.end(), where, ": unknown key '", key,
          "'");
  for (const std::string& key : keys) check(j.contains(key), where, ": missing key '", key, "'");
}

double read_number(const json& j, const std::string& where) {
  check(j.is_number(), where, " must be a number, got ", j.dump());
  const double x = j.get<double>();
  check(std::isfinite(x), where, " must be finite, got ", j.dump());
  return x;
}

int64_t read_count(const json& j, const std::string& where) {
  check(j.is_number_integer() && j.get<int64_t>() >= 0, where, " must be an integer >= 0, got ",
        j.dump());
  return j.get<int64_t>();
}

}  // namespace

Optimizer::Optimizer(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {
  check(!groups_.empty(), "Optimizer: no parameter groups");
  std::set<std::string> group_names, param_names;
  for (const ParamGroup& g : groups_) {
    check(!g.name.empty(), "Optimizer: a parameter group has no name");
    check(group_names.insert(g.name).second, "Optimizer: two groups are named '", g.name, "'");
    for (const Parameter& p : g.params) {
      check(!p.name.empty(), "Optimizer: group '", g.name, "' has a parameter without a name");
      check(p.tensor.defined(), "Optimizer: parameter '", p.name, "' is undefined");
      check(param_names.insert(p.name).second, "Optimizer: parameter '", p.name,
            "' appears twice (names must be unique across groups)");
    }
  }
  group_steps_.assign(groups_.size(), 0);
}

void Optimizer::zero_grad() {
  for (ParamGroup& g : groups_)
    for (Parameter& p : g.params) p.tensor.zero_grad();
}

void Optimizer::set_lr(double base_lr) {
  check(std::isfinite(base_lr) && base_lr >= 0, name(), ": set_lr(", base_lr,
        "): the learning rate must be a finite number >= 0");
  for (ParamGroup& g : groups_) g.lr = base_lr * g.lr_scale;
}

ParameterList Optimizer::all_params() const {
  ParameterList all;
  for (const ParamGroup& g : groups_) all.insert(all.end(), g.params.begin(), g.params.end());
  return all;
}

void Optimizer::validate_group(const ParamGroup& g) const {
  const auto finite_non_negative = [&](const char* what, double x) {
    check(std::isfinite(x) && x >= 0, name(), ": group '", g.name, "': ", what,
          " must be a finite number >= 0, got ", x);
  };
  finite_non_negative("lr", g.lr);
  finite_non_negative("weight_decay", g.weight_decay);
  finite_non_negative("lr_scale", g.lr_scale);
  for (const auto& [key, value] : g.options)
    check(std::isfinite(value), name(), ": group '", g.name, "': option '", key,
          "' must be finite, got ", value);
}

void Optimizer::set_option_defaults(const std::map<std::string, double>& defaults) {
  defaults_ = defaults;
  for (ParamGroup& g : groups_) {
    for (const auto& [key, value] : g.options) {
      std::string known;
      for (const auto& [k, v] : defaults) known += (known.empty() ? "" : ", ") + k;
      check(defaults.count(key), name(), ": group '", g.name, "' sets unknown option '", key,
            "' (options: ", known, ")");
    }
    for (const auto& [key, value] : defaults) g.options.emplace(key, value);
    validate_group(g);
  }
}

void Optimizer::advance_step() {
  ++step_count_;
  for (int64_t& s : group_steps_) ++s;
}

Tensor Optimizer::grad_of(const Parameter& p) const {
  Tensor g = p.tensor.grad();
  if (!g.defined()) return g;
  // Runs for every parameter on every step: build the message only when it is needed.
  if (g.shape() != p.tensor.shape() || g.dtype() != p.tensor.dtype())
    throw Error(cat_str(name(), ": gradient of '", p.name, "' is ", dtype_name(g.dtype()), " ",
                        shape_str(g.shape()), ", the parameter is ", dtype_name(p.tensor.dtype()),
                        " ", shape_str(p.tensor.shape())));
  return g;
}

Tensor& Optimizer::zero_buffer(ParamState& state, const Parameter& p, const std::string& buffer) {
  Tensor& t = state.buffers[buffer];
  if (!t.defined()) t = zeros(p.tensor.shape(), p.tensor.dtype());
  return t;
}

json Optimizer::state_to_json() const {
  json groups = json::array(), state = json::object();
  for (size_t i = 0; i < groups_.size(); ++i) {
    const ParamGroup& g = groups_[i];
    json names = json::array();
    for (const Parameter& p : g.params) {
      names.push_back(p.name);
      json entry = json::object();
      const auto it = state_.find(p.name);
      entry["step"] = it == state_.end() ? 0 : it->second.step;
      for (const std::string& b : buffer_names()) {
        const Tensor* t = nullptr;
        if (it != state_.end()) {
          const auto bt = it->second.buffers.find(b);
          if (bt != it->second.buffers.end() && bt->second.defined()) t = &bt->second;
        }
        entry[b] = t ? tensor_to_json(*t, name() + " state '" + p.name + "'." + b) : json(nullptr);
      }
      state[p.name] = std::move(entry);
    }
    groups.push_back(json{{"name", g.name},
                          {"lr", g.lr},
                          {"weight_decay", g.weight_decay},
                          {"lr_scale", g.lr_scale},
                          {"options", g.options},
                          {"step", group_steps_[i]},
                          {"params", std::move(names)}});
  }
  return json{{"name", name()},
              {"step", step_count_},
              {"groups", std::move(groups)},
              {"state", std::move(state)}};
}

void Optimizer::load_state_json(const json& j) {
  LoadedState loaded = parse_state_json(j);
  groups_ = std::move(loaded.groups);
  group_steps_ = std::move(loaded.group_steps);
  state_ = std::move(loaded.state);
  step_count_ = loaded.step_count;
}

void Optimizer::validate_state_json(const json& j) const {
  parse_state_json(j);
}

Optimizer::LoadedState Optimizer::parse_state_json(const json& j) const {
  const std::string who = name() + " state";
  check_exact_keys(j, who, {"name", "step", "groups", "state"});
  check(j["name"] == name(), who, ": saved by optimiser ", j["name"].dump(), ", this is '", name(),
        "'");
  const int64_t step_count = read_count(j["step"], who + ": step");

  // Groups: the same names and parameters as ours; their hyper-parameters are taken.
  const json& jgroups = j["groups"];
  check(jgroups.is_array() && jgroups.size() == groups_.size(), who,
        ": groups must be an array of ", groups_.size(), " groups, got ",
        jgroups.is_array() ? jgroups.size() : 0);
  std::vector<ParamGroup> groups = groups_;
  std::vector<int64_t> group_steps(groups_.size());
  for (size_t i = 0; i < groups.size(); ++i)
    group_steps[i] = parse_group(jgroups[i], i, who, groups[i]);

  return {std::move(groups), std::move(group_steps), parse_param_states(j["state"], who),
          step_count};
}

namespace {

// A saved group's "params" names exactly the group's parameters, in any order.
void check_same_params(const json& names, const ParamGroup& g, const std::string& where) {
  check(names.is_array(), where, ": params must be an array of names");
  std::set<std::string> saved, ours;
  for (const json& n : names) {
    check(n.is_string(), where, ": params holds a non-string ", n.dump());
    saved.insert(n.get<std::string>());
  }
  for (const Parameter& p : g.params) {
    ours.insert(p.name);
    check(saved.count(p.name), where, ": parameter '", p.name, "' is missing from the saved group");
  }
  for (const std::string& n : saved)
    check(ours.count(n), where, ": saved parameter '", n, "' is not in this group");
}

}  // namespace

int64_t Optimizer::parse_group(const json& jg, size_t index, const std::string& who,
                               ParamGroup& g) const {
  const std::string where = who + ": group '" + g.name + "'";
  check_exact_keys(jg, where,
                   {"name", "lr", "weight_decay", "lr_scale", "options", "step", "params"});
  check(jg["name"] == g.name, who, ": groups[", index, "] is named ", jg["name"].dump(),
        ", expected '", g.name, "'");
  g.lr = read_number(jg["lr"], where + ": lr");
  g.weight_decay = read_number(jg["weight_decay"], where + ": weight_decay");
  g.lr_scale = read_number(jg["lr_scale"], where + ": lr_scale");
  const int64_t step = read_count(jg["step"], where + ": step");
  std::vector<std::string> option_names;
  for (const auto& [key, value] : defaults_) option_names.push_back(key);
  check_exact_keys(jg["options"], where + ": options", option_names);
  for (const std::string& key : option_names)
    g.options[key] = read_number(jg["options"][key], where + ": option '" + key + "'");
  validate_group(g);
  check_same_params(jg["params"], g, where);
  return step;
}

std::map<std::string, Optimizer::ParamState> Optimizer::parse_param_states(
    const json& jstate, const std::string& who) const {
  check(jstate.is_object(), who, ": state must be an object keyed by parameter name");
  std::map<std::string, const Parameter*> by_name;
  for (const ParamGroup& g : groups_)
    for (const Parameter& p : g.params) by_name[p.name] = &p;
  for (const auto& [key, value] : jstate.items())
    check(by_name.count(key), who, ": unknown parameter '", key, "'");
  std::vector<std::string> entry_keys{"step"};
  for (const std::string& b : buffer_names()) entry_keys.push_back(b);
  std::map<std::string, ParamState> state;
  for (const auto& [pname, p] : by_name) {
    check(jstate.contains(pname), who, ": missing parameter '", pname, "'");
    const std::string where = who + " '" + pname + "'";
    const json& entry = jstate[pname];
    check_exact_keys(entry, where, entry_keys);
    ParamState& s = state[pname];
    s.step = read_count(entry["step"], where + ": step");
    for (const std::string& b : buffer_names()) {
      if (entry[b].is_null()) continue;
      Tensor t = tensor_from_json(entry[b], where + "." + b);
      check(t.shape() == p->tensor.shape() && t.dtype() == p->tensor.dtype(), where, ".", b, " is ",
            dtype_name(t.dtype()), " ", t.shape(), ", the parameter is ",
            dtype_name(p->tensor.dtype()), " ", p->tensor.shape());
      s.buffers[b] = t;
    }
  }
  return state;
}

}  // namespace vg::optim
