#include "engine/autograd/autograd.h"

#include <cmath>
#include <unordered_map>

#include "engine/autograd/profile.h"
#include "engine/kernels/add_arrays.h"
#include "engine/kernels/axis_sums.h"

namespace vg {
namespace {

thread_local bool t_grad_enabled = true;
thread_local bool t_anomaly = false;
thread_local std::string t_module_path;
// The node whose backward closure is running and the gradients its inputs' nodes have received
// so far: what take_received_grad hands over; and whether anomaly mode is on for the backward
// (run_node turns it off inside the closure).
struct RunningBackward {
  Node* node = nullptr;
  std::unordered_map<Node*, Tensor>* grads = nullptr;
  bool anomaly = false;
};
thread_local RunningBackward t_running;
class RunningScope {
 public:
  RunningScope(Node& n, std::unordered_map<Node*, Tensor>& grads) : outer_(t_running) {
    t_running = {&n, &grads, t_anomaly};
  }
  ~RunningScope() { t_running = outer_; }
  RunningScope(const RunningScope&) = delete;
  RunningScope& operator=(const RunningScope&) = delete;

 private:
  RunningBackward outer_;
};
thread_local FlopCounter* t_flop_counter = nullptr;

// True when nobody else can see `t`: it may then be updated in place.
bool exclusively_owned(const Tensor& t) {
  return t.impl_ptr().use_count() == 1 && t.impl()->storage.use_count() == 1;
}

// acc += g, in place when acc is ours alone, otherwise into a new tensor (a gradient may be
// the very tensor another input received, e.g. both operands of add). FLOPs are counted as
// the op add would count them.
void accumulate(Tensor& acc, const Tensor& g) {
  if (!acc.defined()) {
    acc = g;
    return;
  }
  Tensor sum = exclusively_owned(acc) ? acc : Tensor::empty(acc.shape(), acc.dtype());
  dispatch(acc.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::add_arrays(acc.data<T>(), g.data<T>(), sum.data<T>(), acc.numel());
  });
  if (sum.impl_ptr() != acc.impl_ptr()) add_flops(double(acc.numel()));
  acc = sum;
}

// g summed over the axes along which `shape` was broadcast to g's shape (leading axes it
// lacks, axes where it has 1), with the kernel and summation order of the op `sum`.
Tensor sum_broadcast_axes(const Tensor& g, const Shape& shape, const Node& node) {
  const int64_t extra = g.dim() - static_cast<int64_t>(shape.size());
  check(extra >= 0, "backward of ", node.op, ": gradient of shape ", g.shape(),
        " has fewer axes than input shape ", shape);
  std::vector<bool> reduced(g.dim(), false);
  for (int64_t i = 0; i < g.dim(); ++i) {
    const int64_t want = i < extra ? 1 : shape[i - extra];
    check(i < extra || want == g.shape()[i] || want == 1, "backward of ", node.op,
          ": gradient of shape ", g.shape(), " does not fit input shape ", shape);
    reduced[i] = i < extra || (want == 1 && g.shape()[i] != 1);
  }
  Tensor out = Tensor::empty(shape, g.dtype());
  dispatch(g.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::sum_axes(g.data<T>(), g.shape(), reduced, out.data<T>());
  });
  add_flops(double(g.numel()));
  return out;
}

// Brings a gradient to the shape and dtype of the input it belongs to.
Tensor fit_to_input(const Tensor& g, const Edge& edge, const Node& node) {
  Tensor out = g;
  // Checked axis by axis there: a gradient can hold fewer elements than its input, where the
  // input was broadcast along an empty axis (a position embedding added to a batch of none).
  if (out.shape() != edge.shape) out = sum_broadcast_axes(out, edge.shape, node);
  if (out.dtype() != edge.dtype) out = out.to(edge.dtype);
  return out;
}

}  // namespace

bool grad_enabled() {
  return t_grad_enabled;
}

bool any_requires_grad(std::initializer_list<Tensor> inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && (t.requires_grad() || t.grad_fn())) return true;
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && (t.requires_grad() || t.grad_fn())) return true;
  return false;
}

Tensor record(const char* op, Tensor result, const std::vector<Tensor>& inputs,
              BackwardFn backward) {
  if (t_anomaly) check_finite(result, op, t_module_path, "forward");
  if (t_grad_enabled) profile_forward(op);  // ops inside a backward are charged to it
  if (!any_requires_grad(inputs)) return result;
  auto node = std::make_shared<Node>();
  node->op = op;
  node->module = t_module_path;
  node->backward = std::move(backward);
  node->shape = result.shape();
  node->dtype = result.dtype();
  node->inputs.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    Edge e;
    if (t.defined()) {
      e.shape = t.shape();
      e.dtype = t.dtype();
      if (t.grad_fn())
        e.node = t.grad_fn();
      else if (t.requires_grad())
        e.leaf = t.impl_ptr();
    }
    node->inputs.push_back(std::move(e));
  }
  result.impl()->grad_fn = std::move(node);
  return result;
}

Node::~Node() {
  // Free a long chain iteratively: each node hands over the inputs only it keeps alive,
  // so destroying a 100 000-op graph does not recurse 100 000 deep.
  backward = nullptr;
  std::vector<std::shared_ptr<Node>> orphans;
  auto adopt = [&](Node& n) {
    for (Edge& e : n.inputs)
      if (e.node && e.node.use_count() == 1) orphans.push_back(std::move(e.node));
  };
  adopt(*this);
  while (!orphans.empty()) {
    std::shared_ptr<Node> n = std::move(orphans.back());
    orphans.pop_back();
    n->backward = nullptr;
    adopt(*n);
  }
}

namespace {

// backward() on a tensor no op made: its gradient goes straight into its .grad.
void backward_into_leaf(const Tensor& root, const Tensor& grad0) {
  check(root.requires_grad(),
        "backward: the tensor does not require grad and was not made "
        "by an op that does");
  Tensor g = root.grad();
  const bool summed = g.defined();
  accumulate(g, grad0.clone());
  if (t_anomaly && summed) check_finite(g, "backward", t_module_path, "gradient accumulation");
  root.impl()->grad = g;
}

// For every node reachable from `root`, the number of edges that lead into it: its consumers.
// Kahn's algorithm runs a node once all of its consumers have delivered their gradients.
std::unordered_map<Node*, int> count_consumers(Node* root) {
  std::unordered_map<Node*, int> consumers;
  std::vector<Node*> stack{root};
  consumers[root] = 0;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (Edge& e : n->inputs) {
      if (!e.node) continue;
      auto [it, fresh] = consumers.emplace(e.node.get(), 0);
      it->second++;
      if (fresh) stack.push_back(e.node.get());
    }
  }
  return consumers;
}

// n's backward on g, the gradient of n's output: one gradient per input. Without
// retain_graph the node's saved tensors are released right after.
std::vector<Tensor> run_node(Node& n, Tensor g, bool retain_graph) {
  check(static_cast<bool>(n.backward), "backward: the graph through '", n.op,
        "' was freed by an earlier backward(); call backward(retain_graph=true) the first "
        "time to go through it again");
  if (t_anomaly) check_finite(g, n.op, n.module, "backward (gradient of the output)");
  std::vector<Tensor> input_grads;
  {
    // The ops a backward runs are not forward outputs: their result is checked in deliver(),
    // as the gradient of this node, with its op and module path.
    AnomalyGuard inside_backward(false);
    input_grads = n.backward(g);
  }
  g = Tensor();
  if (!retain_graph) n.backward = nullptr;  // releases the saved tensors now
  n.ran = true;
  check(input_grads.size() == n.inputs.size(), "backward of ", n.op, " returned ",
        input_grads.size(), " gradients for ", n.inputs.size(), " inputs");
  return input_grads;
}

// Adds input_grad, the gradient n's backward made for input edge e, to what e's node (in
// `grads`) or leaf (its .grad) has received so far.
void deliver(const Node& n, Edge& e, const Tensor& input_grad,
             std::unordered_map<Node*, Tensor>& grads) {
  Tensor gi = fit_to_input(input_grad, e, n);
  if (t_anomaly) check_finite(gi, n.op, n.module, "backward");
  Tensor* acc = e.node ? &grads[e.node.get()] : &e.leaf->grad;
  // A stored gradient must not share memory with anything else: optimisers and later
  // accumulation update it in place.
  if (!e.node && !acc->defined() && !exclusively_owned(gi)) gi = gi.clone();
  const bool summed = acc->defined();
  accumulate(*acc, gi);
  // Two finite gradients can sum to Inf; anomaly mode names the op whose gradient tipped it
  // over, as it did when the sum was the op add.
  if (t_anomaly && summed) check_finite(*acc, n.op, n.module, "gradient accumulation");
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  check(root.defined() && gradient.defined(), "backward: undefined tensor or gradient");
  check(gradient.shape() == root.shape(), "backward: gradient shape ", gradient.shape(),
        " does not match tensor shape ", root.shape());
  NoGradGuard no_grad;  // first-order only: backward records nothing
  const Tensor grad0 = gradient.dtype() == root.dtype() ? gradient : gradient.to(root.dtype());
  if (!root.grad_fn()) return backward_into_leaf(root, grad0);

  Node* const root_node = root.grad_fn().get();
  std::unordered_map<Node*, int> pending_consumers = count_consumers(root_node);
  std::unordered_map<Node*, Tensor> grads{{root_node, grad0}};
  std::vector<Node*> ready{root_node};
  // One consumer of e's node has delivered (or had nothing to deliver).
  auto consumer_done = [&](const Edge& e) {
    if (e.node && --pending_consumers[e.node.get()] == 0) ready.push_back(e.node.get());
  };
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    Tensor g;
    if (auto it = grads.find(n); it != grads.end()) {
      g = std::move(it->second);
      grads.erase(it);
    }
    if (!g.defined()) {  // no consumer produced a gradient: nothing flows through n
      for (const Edge& e : n->inputs) consumer_done(e);
      continue;
    }
    OpProfiler* profiler = active_profiler();  // charged with the closure and the delivery
    const auto backward_start =
        profiler ? OpProfiler::Clock::now() : OpProfiler::Clock::time_point{};
    std::vector<Tensor> input_grads;
    {
      const RunningScope running(*n, grads);
      input_grads = run_node(*n, std::move(g), retain_graph);
    }
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      Edge& e = n->inputs[i];
      if (e.needed() && input_grads[i].defined()) deliver(*n, e, input_grads[i], grads);
      consumer_done(e);
    }
    if (profiler) profiler->charge(std::string(n->op) + " (backward)", backward_start);
  }
}

Tensor take_received_grad(size_t input, const Shape& shape, DType dtype) {
  // Anomaly mode checks the op's gradient and the sum apart, to name the one that overflowed.
  if (!t_running.node || t_running.anomaly || input >= t_running.node->inputs.size())
    return Tensor();
  const Edge& e = t_running.node->inputs[input];
  if (!e.node) return Tensor();
  auto it = t_running.grads->find(e.node.get());
  if (it == t_running.grads->end()) return Tensor();
  Tensor& received = it->second;
  if (!received.defined() || received.shape() != shape || received.dtype() != dtype ||
      !exclusively_owned(received))
    return Tensor();
  Tensor out = std::move(received);
  t_running.grads->erase(it);
  return out;
}

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) {
  t_grad_enabled = false;
}
NoGradGuard::~NoGradGuard() {
  t_grad_enabled = previous_;
}

ModuleScope::ModuleScope(const std::string& name) : previous_length_(t_module_path.size()) {
  if (name.empty()) return;
  if (!t_module_path.empty()) t_module_path += '.';
  t_module_path += name;
}
ModuleScope::~ModuleScope() {
  t_module_path.resize(previous_length_);
}
const std::string& current_module_path() {
  return t_module_path;
}

FlopCounter::FlopCounter() : previous_(t_flop_counter) {
  t_flop_counter = this;
}
FlopCounter::~FlopCounter() {
  t_flop_counter = previous_;
  if (previous_) {
    previous_->total_ += total_;
    previous_->matmul_ += matmul_;
  }
}
void add_flops(double flops, bool is_matmul) {
  if (FlopCounter* c = t_flop_counter) {
    c->total_ += flops;
    if (is_matmul) c->matmul_ += flops;
  }
}

AnomalyGuard::AnomalyGuard(bool on) : previous_(t_anomaly) {
  t_anomaly = on;
}
AnomalyGuard::~AnomalyGuard() {
  t_anomaly = previous_;
}
bool anomaly_enabled() {
  return t_anomaly;
}

void check_finite(const Tensor& t, const char* op, const std::string& module,
                  const char* direction) {
  if (!t.defined()) return;
  int64_t bad = -1;
  dispatch(t.dtype(), [&](auto z) {
    const auto* p = t.data<decltype(z)>();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!std::isfinite(p[i])) {
        bad = i;
        break;
      }
  });
  if (bad < 0) return;
  const double value = t.to_vector()[bad];
  throw Error(cat_str("anomaly: ", std::isnan(value) ? "NaN" : "Inf", " in the ", direction, " of ",
                      op, module.empty() ? "" : " in " + module, " (element ", bad, " of shape ",
                      shape_str(t.shape()), ")"));
}

// Tensor::backward (declared in core/tensor.h) starts the pass above.
void Tensor::backward(bool retain_graph) const {
  check(numel() == 1, "backward: the tensor has shape ", shape(),
        "; a non-scalar needs an explicit gradient: backward(gradient)");
  run_backward(*this, full(shape(), 1.0, dtype()), retain_graph);
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  run_backward(*this, gradient, retain_graph);
}

}  // namespace vg
