// The optimiser base: parameter groups, the step counters and the per-parameter state,
// which is plain data keyed by parameter name (never by pointer) so that it round-trips
// through JSON and loads into a freshly built model.
//
// state_to_json() writes
//   {"name": "adamw", "step": 3,
//    "groups": [{"name": "decay", "lr": ..., "weight_decay": ..., "lr_scale": ...,
//                "options": {"beta1": 0.9, ...}, "step": 3, "params": ["blocks.0.attn.qkv.weight",
//                ...]}],
//    "state": {"blocks.0.attn.qkv.weight": {"step": 3, "exp_avg": <tensor>, "exp_avg_sq":
//    <tensor>}}}
// where a buffer not made yet (before the parameter's first update) is null.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/optim/param_groups.h"

namespace vg::optim {

class Optimizer {
 public:
  // Takes the groups as they are; parameter names must be unique across all groups.
  explicit Optimizer(std::vector<ParamGroup> groups);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient; the others are skipped (PyTorch).
  virtual void step() = 0;
  // Drops every parameter's gradient (PyTorch's set_to_none).
  void zero_grad();

  std::vector<ParamGroup>& groups() { return groups_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // Every group: lr = base_lr * lr_scale (what a schedule calls once per step).
  void set_lr(double base_lr);

  virtual std::string name() const = 0;  // "sgd", "adamw", "lamb"
  // Step counters, group hyper-parameters and per-parameter buffers (see the top).
  virtual nlohmann::json state_to_json() const;
  // Restores state_to_json's output, group hyper-parameters included (as PyTorch's
  // load_state_dict). Everything is validated first (optimiser name, groups and their
  // parameters, every parameter name known and present, buffer shapes and dtypes, no extra
  // keys); on any error nothing has changed and the vg::Error names the entry.
  virtual void load_state_json(const nlohmann::json& j);
  // Runs every check of load_state_json and changes nothing (a checkpoint loader validates
  // all its parts before it restores any).
  void validate_state_json(const nlohmann::json& j) const;

  ParameterList all_params() const;                   // in group order
  int64_t step_count() const { return step_count_; }  // step() calls so far

 protected:
  struct ParamState {
    int64_t step = 0;                       // updates this parameter has taken
    std::map<std::string, Tensor> buffers;  // undefined until first needed
  };

  // The buffers every parameter keeps, e.g. {"exp_avg", "exp_avg_sq"}.
  virtual std::vector<std::string> buffer_names() const = 0;
  // Checks one group's hyper-parameters (ranges, combinations); throws vg::Error.
  virtual void validate_group(const ParamGroup& group) const;

  // Called by the subclass constructor: gives every group the options it does not set,
  // rejects option names the optimiser does not know, then validates every group.
  void set_option_defaults(const std::map<std::string, double>& defaults);
  // Starts a step: counts it, for the optimiser and for every group.
  void advance_step();
  int64_t group_step(size_t group) const { return group_steps_[group]; }
  ParamState& state_of(const Parameter& p) { return state_[p.name]; }
  // The parameter's gradient, checked against its shape and dtype; undefined if none.
  Tensor grad_of(const Parameter& p) const;
  // A buffer of `p`'s shape and dtype, made with zeros on first use.
  Tensor& zero_buffer(ParamState& state, const Parameter& p, const std::string& buffer);

 private:
  // What load_state_json commits once everything has been checked.
  struct LoadedState {
    std::vector<ParamGroup> groups;
    std::vector<int64_t> group_steps;
    std::map<std::string, ParamState> state;
    int64_t step_count = 0;
  };
  LoadedState parse_state_json(const nlohmann::json& j) const;
  // One saved group into a copy of ours (the same name and parameters); returns its step.
  int64_t parse_group(const nlohmann::json& jg, size_t index, const std::string& who,
                      ParamGroup& g) const;
  // Every parameter's step and buffers, nothing else, each buffer fitting its parameter.
  std::map<std::string, ParamState> parse_param_states(const nlohmann::json& jstate,
                                                       const std::string& who) const;

  std::vector<ParamGroup> groups_;
  std::vector<int64_t> group_steps_;
  std::map<std::string, ParamState> state_;  // keyed by parameter name
  std::map<std::string, double> defaults_;
  int64_t step_count_ = 0;
};

}  // namespace vg::optim
