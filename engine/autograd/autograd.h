// Reverse-mode automatic differentiation on a dynamic graph.
//
// Every differentiable op computes its result, then calls `record(...)` with a closure that
// maps the gradient of the result to gradients of its inputs. The closure captures what the
// backward needs (saved tensors) and is freed as soon as backward has run it. The engine, not
// each op, does the generic work: it orders the nodes (iteratively: a chain of 100 000 ops
// must not overflow the stack), reduces a gradient that was computed in a broadcast shape to
// the shape of its operand, and accumulates into `.grad` of the leaves.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace vg {

// Where a node sends the gradient of one of its inputs: to the node that made that input,
// or, for a leaf that requires grad, into the leaf's .grad. Neither: no gradient needed.
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<TensorImpl> leaf;
  Shape shape;  // the input's shape: a broadcast gradient is summed back to it
  DType dtype = DType::f32;
  bool needed() const { return node || leaf; }
};

// Maps the output gradient to one gradient per input (undefined where not needed). A
// gradient may come back in a shape the input broadcasts to; the engine sums it down.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

struct Node {
  const char* op = "";     // "matmul", "layer_norm", ...
  std::string module;      // module path when recorded, e.g. "blocks.2.attn"
  std::vector<Edge> inputs;
  BackwardFn backward;     // empty once run (the graph was freed)
  Shape shape;             // of the output
  DType dtype = DType::f32;
  bool ran = false;        // backward has run at least once

  ~Node();  // iterative, so a very long chain is freed without deep recursion

  bool needs_grad(size_t input) const { return input < inputs.size() && inputs[input].needed(); }
};

// True when ops should record the graph: grad mode is on (no NoGradGuard active).
bool grad_enabled();
// True when at least one of `inputs` requires grad and grad mode is on.
bool any_requires_grad(std::initializer_list<Tensor> inputs);
bool any_requires_grad(const std::vector<Tensor>& inputs);

// Attaches `backward` to `result` as the op `op` applied to `inputs`, if any input needs a
// gradient; otherwise returns `result` untouched and drops the closure. The closure may
// capture inputs, but never `result` itself (that would be a cycle): capture
// `result.detach()` when the backward needs the output.
Tensor record(const char* op, Tensor result, const std::vector<Tensor>& inputs,
              BackwardFn backward);

// Runs backward from `root` with `gradient` (see Tensor::backward).
void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

// For a backward closure: the gradient that input `input` of the running node has received so
// far from its other consumers (a residual's), handed over so that the pass making this node's
// own gradient for it adds into it in place: one pass instead of a stored gradient and the
// engine's add reading it back (LayerNorm's dx after the block's residual). The closure must
// then return received + own as that input's gradient, with the bits of the engine's add
// (kernels/add_arrays.h). Undefined where there is nothing to take: outside a backward, an
// input that is a leaf or received nothing yet, a gradient of another shape or dtype, one that
// something else still holds, or in anomaly mode (which checks the two apart).
Tensor take_received_grad(size_t input, const Shape& shape, DType dtype);

// Disables graph recording in its scope (RAII), e.g. for evaluation and optimiser steps.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Names the module that is running, so recorded nodes and anomaly reports can say
// "blocks.2.attn". Modules open one scope per forward call; scopes nest with dots.
class ModuleScope {
 public:
  explicit ModuleScope(const std::string& name);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  size_t previous_length_;
};
const std::string& current_module_path();

// Forward FLOPs of the ops run in its scope: every op adds its formula as it runs.
class FlopCounter {
 public:
  FlopCounter();
  ~FlopCounter();
  double total() const { return total_; }
  double matmul() const { return matmul_; }  // the part spent in matrix products

 private:
  friend void add_flops(double, bool);
  FlopCounter* previous_;
  double total_ = 0, matmul_ = 0;
};
// Called by ops: `flops` floating-point operations, `is_matmul` for BLAS products.
void add_flops(double flops, bool is_matmul = false);

// Anomaly mode: every recorded output and every gradient is checked for NaN/Inf; the first
// one found is a vg::Error naming the op, the module path and the direction.
class AnomalyGuard {
 public:
  explicit AnomalyGuard(bool on = true);
  ~AnomalyGuard();

 private:
  bool previous_;
};
bool anomaly_enabled();
// Throws if `t` holds a NaN or Inf (used by anomaly mode; public for training guards).
void check_finite(const Tensor& t, const char* op, const std::string& module,
                  const char* direction);

}  // namespace vg
