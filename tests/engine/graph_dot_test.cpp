#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "engine/autograd/graph_dot.h"
#include "engine/ops/ops.h"

using namespace vg;

TEST_CASE("the DOT graph names ops, module paths, shapes and leaves") {
  Tensor x = ones({2, 3}).set_requires_grad().set_name("x");
  Tensor w = ones({3}).set_requires_grad().set_name("gamma");
  Tensor loss;
  {
    ModuleScope scope("blocks.0.ls1");
    loss = sum(mul(x, w));
  }
  const std::string dot = graph_to_dot(loss);
  CHECK(dot.rfind("digraph autograd {", 0) == 0);
  CHECK(dot.find("label=\"mul\nblocks.0.ls1\n[2,3]\"") != std::string::npos);
  CHECK(dot.find("label=\"sum\nblocks.0.ls1\n[]\"") != std::string::npos);
  CHECK(dot.find("label=\"gamma\n[3]\"") != std::string::npos);
  CHECK(dot.find("label=\"x\n[2,3]\"") != std::string::npos);
  // 2 op nodes and 2 leaves, joined by 3 edges
  size_t edges = 0;
  for (size_t at = dot.find("->"); at != std::string::npos; at = dot.find("->", at + 1)) ++edges;
  CHECK(edges == 3);
  CHECK_THROWS_AS(graph_to_dot(ones({2})), Error);
}
