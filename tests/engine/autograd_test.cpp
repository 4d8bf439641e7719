#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "engine/ops/ops.h"

using namespace vg;

static Tensor leaf(std::vector<double> v, Shape s) {
  return from_vector(v, s).set_requires_grad();
}

TEST_CASE("gradients accumulate over two backward calls until zero_grad") {
  Tensor x = leaf({1, 2, 3}, {3});
  sum(mul(x, x)).backward();
  CHECK(x.grad().to_vector() == std::vector<double>{2, 4, 6});
  sum(mul(x, x)).backward();
  CHECK(x.grad().to_vector() == std::vector<double>{4, 8, 12});
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
  sum(x).backward();
  CHECK(x.grad().to_vector() == std::vector<double>{1, 1, 1});
}

TEST_CASE("a tensor used twice receives the sum of both gradients") {
  Tensor x = leaf({3}, {1});
  Tensor y = add(mul(x, 2.0), mul(x, x));  // dy/dx = 2 + 2x = 8
  y.backward();
  CHECK(x.grad().item() == 8.0);
}

TEST_CASE("both operands of add get independent gradient buffers") {
  Tensor a = leaf({1, 2}, {2}), b = leaf({3, 4}, {2});
  sum(add(a, b)).backward();
  CHECK(a.grad().raw_data() != b.grad().raw_data());
}

TEST_CASE("no_grad records nothing and detach cuts the graph") {
  Tensor x = leaf({1, 2}, {2});
  {
    NoGradGuard guard;
    Tensor y = mul(x, 3.0);
    CHECK_FALSE(y.grad_fn());
    CHECK_FALSE(y.requires_grad());
  }
  Tensor y = mul(x, 3.0);
  CHECK(y.grad_fn());
  Tensor d = y.detach();
  CHECK_FALSE(d.grad_fn());
  CHECK(d.raw_data() == y.raw_data());
  Tensor z = sum(mul(d, x));  // only x's path carries gradient
  z.backward();
  CHECK(x.grad().to_vector() == std::vector<double>{3, 6});
}

TEST_CASE("backward on a non-scalar needs an explicit gradient") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = mul(x, 2.0);
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("explicit gradient"), Error);
  y.backward(from_vector(std::vector<double>{1, 10}, {2}));
  CHECK(x.grad().to_vector() == std::vector<double>{2, 20});
  CHECK_THROWS_WITH_AS(y.backward(ones({3}, DType::f64)), doctest::Contains("does not match"),
                       Error);
}

TEST_CASE("backward twice through a freed graph is a clear error; retain_graph allows it") {
  Tensor x = leaf({2}, {1});
  Tensor y = exp(x);
  y.backward(/*retain_graph=*/true);
  y.backward();
  CHECK(x.grad().item() == doctest::Approx(2 * std::exp(2.0)));
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("freed"), Error);
}

TEST_CASE("backward of a tensor that needs no gradient is an error") {
  CHECK_THROWS_WITH_AS(sum(ones({2})).backward(), doctest::Contains("does not require grad"),
                       Error);
}

TEST_CASE("broadcast gradients are summed to the operand's shape") {
  Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = leaf({10, 20, 30}, {3});
  Tensor col = leaf({1, 2}, {2, 1});
  sum(mul(add(a, row), col)).backward();
  CHECK(row.grad().shape() == Shape{3});
  CHECK(row.grad().to_vector() == std::vector<double>{3, 3, 3});
  CHECK(col.grad().shape() == Shape{2, 1});
  CHECK(col.grad().to_vector() == std::vector<double>{66, 75});
}

TEST_CASE("an operand broadcast along an empty axis gets a zero gradient of its shape") {
  // A position embedding (1, T, C) added to a batch of no rows: PyTorch's answer too.
  Tensor batch = zeros({0, 3, 2}, DType::f64);
  batch.set_requires_grad();
  Tensor pos = leaf({1, 2, 3, 4, 5, 6}, {1, 3, 2});
  Tensor bias = leaf({7, 8}, {2});
  sum(add(add(batch, pos), bias)).backward();
  CHECK(batch.grad().shape() == Shape{0, 3, 2});
  CHECK(pos.grad().shape() == Shape{1, 3, 2});
  CHECK(pos.grad().to_vector() == std::vector<double>(6, 0.0));
  CHECK(bias.grad().to_vector() == std::vector<double>{0, 0});
  // Shapes that do not broadcast are still refused, axis by axis.
  CHECK_THROWS_AS(sum_to_shape(zeros({0, 3, 2}), {2, 3, 2}), Error);
  CHECK_THROWS_AS(add(zeros({0, 3, 2}, DType::f64), pos.detach().reshape({3, 1, 2})), Error);
}

TEST_CASE("a chain of 100000 ops runs backward and frees without overflowing the stack") {
  Tensor x = leaf({1.0}, {1});
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = add(y, 1e-5);
  CHECK(y.item() == doctest::Approx(2.0));
  y.backward();
  CHECK(x.grad().item() == 1.0);
  y = Tensor();  // destroys the whole chain
}

TEST_CASE("saved tensors are released by backward unless the graph is retained") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = exp(x);  // its backward saves x and y
  CHECK(x.impl()->storage.use_count() == 2);
  sum(y).backward(/*retain_graph=*/true);
  CHECK(x.impl()->storage.use_count() == 2);
  x.zero_grad();
  sum(y).backward();
  CHECK(x.impl()->storage.use_count() == 1);
  CHECK_FALSE(y.grad_fn()->backward);
}

TEST_CASE("shape mismatch errors name the op and the shapes") {
  CHECK_THROWS_WITH_AS(add(ones({2, 3}), ones({4})), doctest::Contains("add: shapes [2,3] and [4]"),
                       Error);
  CHECK_THROWS_WITH_AS(mul(ones({2}), ones({2}, DType::f64)), doctest::Contains("dtypes"), Error);
}

TEST_CASE("module scopes name recorded nodes and anomaly mode reports them") {
  Tensor x = leaf({-1.0, 1.0}, {2});
  {
    ModuleScope outer("blocks");
    ModuleScope inner("2");
    ModuleScope leafscope("attn");
    CHECK(current_module_path() == "blocks.2.attn");
    CHECK(exp(x).grad_fn()->module == "blocks.2.attn");
    AnomalyGuard anomaly;
    CHECK_THROWS_WITH_AS(log(x), doctest::Contains("NaN in the forward of log in blocks.2.attn"),
                         Error);
  }
  CHECK(current_module_path().empty());
}

TEST_CASE("anomaly mode reports two finite gradients that sum to Inf, naming the op") {
  // x is used twice; each use sends back 3e38 (finite in float32), their sum overflows.
  // The forward stays finite because x is small.
  for (bool leaf_input : {true, false}) {
    CAPTURE(leaf_input);
    Tensor x = from_vector(std::vector<double>{1e-10}, {1}, DType::f32).set_requires_grad();
    Tensor big = full({1}, 3e38, DType::f32);
    Tensor loss;
    {
      ModuleScope scope("head");
      Tensor used = leaf_input ? x : mul(x, 1.0);  // a node instead of a leaf
      loss = sum(add(mul(used, big), mul(used, big)));
    }
    AnomalyGuard anomaly;
    CHECK_THROWS_WITH_AS(loss.backward(),
                         doctest::Contains("Inf in the gradient accumulation of mul in head"),
                         Error);
  }
}

TEST_CASE("anomaly mode reports a stored gradient that overflows over two backward calls") {
  Tensor x = from_vector(std::vector<double>{3e38}, {1}, DType::f32).set_requires_grad();
  AnomalyGuard anomaly;
  x.backward(full({1}, 3e38, DType::f32));
  CHECK_THROWS_WITH_AS(x.backward(full({1}, 3e38, DType::f32)),
                       doctest::Contains("Inf in the gradient accumulation"), Error);
}

TEST_CASE("flop counter sums the forward FLOPs of the ops in its scope") {
  FlopCounter counter;
  Tensor a = ones({4, 5});
  add(a, a);
  exp(a);
  CHECK(counter.total() == 40.0);
}
