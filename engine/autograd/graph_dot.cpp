#include "engine/autograd/graph_dot.h"

#include <sstream>
#include <unordered_map>
#include <vector>

#include "engine/autograd/autograd.h"

namespace vg {
namespace {

// DOT strings are double-quoted; only the quote and the backslash need escaping.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string graph_to_dot(const Tensor& root) {
  check(root.defined() && root.grad_fn(), "graph_to_dot: the tensor was not made by a "
                                          "recorded op (does anything require grad?)");
  std::ostringstream out;
  out << "digraph autograd {\n  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  std::unordered_map<const void*, std::string> ids;
  auto id_of = [&](const void* p, bool& fresh) {
    // Built in place: GCC 12 flags `"n" + string` (and `"\n" + string` below) with a false
    // -Wrestrict.
    std::string id(1, 'n');
    id += std::to_string(ids.size());
    auto [it, inserted] = ids.emplace(p, std::move(id));
    fresh = inserted;
    return it->second;
  };
  std::vector<Node*> stack{root.grad_fn().get()};
  bool fresh;
  id_of(stack[0], fresh);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    const std::string id = id_of(n, fresh);
    std::string label = n->op;
    if (!n->module.empty()) (label += '\n') += n->module;
    (label += '\n') += shape_str(n->shape);
    out << "  " << id << " [shape=ellipse, label=" << quoted(label) << "];\n";
    for (const Edge& e : n->inputs) {
      if (e.node) {
        const std::string to = id_of(e.node.get(), fresh);
        if (fresh) stack.push_back(e.node.get());
        out << "  " << to << " -> " << id << ";\n";
      } else if (e.leaf) {
        const std::string to = id_of(e.leaf.get(), fresh);
        if (fresh) {
          const std::string name = e.leaf->name.empty() ? "leaf" : e.leaf->name;
          out << "  " << to << " [shape=box, style=filled, fillcolor=\"#dde8f5\", label="
              << quoted(name + "\n" + shape_str(e.shape)) << "];\n";
        }
        out << "  " << to << " -> " << id << ";\n";
      }
    }
  }
  out << "}\n";
  return out.str();
}

}  // namespace vg
