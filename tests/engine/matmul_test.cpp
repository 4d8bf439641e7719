#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::variable;

namespace {

// op(a) op(b) from primitive ops: a broadcast product (..., M, K, 1) * (..., 1, K, N) summed
// over K. No BLAS, and the batch broadcasting is mul's.
Tensor reference_matmul(Tensor a, Tensor b, bool ta = false, bool tb = false) {
  if (ta) a = transpose(a, -2, -1);
  if (tb) b = transpose(b, -2, -1);
  Shape sa = a.shape(), sb = b.shape();
  sa.push_back(1);
  sb.insert(sb.end() - 2, 1);
  return sum(a.reshape(sa) * b.reshape(sb), {-2});
}

// Largest |a - b|; the shapes must agree.
double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE_MESSAGE(a.shape() == b.shape(), shape_str(a.shape()), " vs ", shape_str(b.shape()));
  return max(abs(a - b)).item();
}

// A stored operand shape: `batch` followed by the (rows, cols) of the logical matrix, or the
// swapped pair when the operand is read transposed.
Shape stored(Shape batch, int64_t rows, int64_t cols, bool transposed) {
  batch.push_back(transposed ? cols : rows);
  batch.push_back(transposed ? rows : cols);
  return batch;
}

// The batch layouts every matmul test runs through: (a batch, b batch), the folded fast
// path, broadcast operands on either side and a broadcast on both.
const std::vector<std::pair<Shape, Shape>> kBatchLayouts = {
    {{}, {}},  {{2}, {}},  {{2, 3}, {1}},    {{}, {1, 1}},
    {{}, {2}}, {{2}, {2}}, {{2, 1}, {1, 3}}, {{1, 3}, {2, 1}},
};

std::string describe(const Shape& a, const Shape& b, bool ta, bool tb) {
  return cat_str("a ", shape_str(a), ", b ", shape_str(b), ", trans_a=", ta, ", trans_b=", tb);
}

}  // namespace

// --- forward values --------------------------------------------------------------------

TEST_CASE("matmul of small matrices gives the hand-computed products") {
  for (DType dt : {DType::f32, DType::f64}) {
    INFO(dtype_name(dt));
    Tensor a = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, dt);
    Tensor b = from_vector({7, 8, 9, 10, 11, 12}, {3, 2}, dt);
    // [1 2 3; 4 5 6] [7 8; 9 10; 11 12] = [58 64; 139 154]
    Tensor c = matmul(a, b);
    CHECK(c.shape() == Shape{2, 2});
    CHECK(c.to_vector() == std::vector<double>{58, 64, 139, 154});
    // (3x2)(2x3): [7 8; 9 10; 11 12] [1 2 3; 4 5 6]
    CHECK(matmul(b, a).to_vector() == std::vector<double>{39, 54, 69, 49, 68, 87, 59, 82, 105});
    // a row times a column, and a column times a row
    Tensor row = from_vector({1, -2, 3}, {1, 3}, dt), col = from_vector({4, 5, 6}, {3, 1}, dt);
    CHECK(matmul(row, col).to_vector() == std::vector<double>{12});
    CHECK(matmul(col, row).to_vector() == std::vector<double>{4, -8, 12, 5, -10, 15, 6, -12, 18});
    // with the trans flags the same numbers come out of the transposed storage
    Tensor at = from_vector({1, 4, 2, 5, 3, 6}, {3, 2}, dt);
    Tensor bt = from_vector({7, 9, 11, 8, 10, 12}, {2, 3}, dt);
    CHECK(matmul(at, b, true, false).to_vector() == c.to_vector());
    CHECK(matmul(a, bt, false, true).to_vector() == c.to_vector());
    CHECK(matmul(at, bt, true, true).to_vector() == c.to_vector());
  }
}

TEST_CASE("matmul trans flags equal an explicit transpose") {
  for (const auto& [ba, bb] : kBatchLayouts)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const Tensor a = variable(stored(ba, 3, 4, ta), 1).detach();
        const Tensor b = variable(stored(bb, 4, 5, tb), 2).detach();
        INFO(describe(a.shape(), b.shape(), ta, tb));
        const Tensor explicit_a = ta ? transpose(a, -2, -1) : a;
        const Tensor explicit_b = tb ? transpose(b, -2, -1) : b;
        CHECK(max_abs_diff(matmul(a, b, ta, tb), matmul(explicit_a, explicit_b)) < 1e-13);
        CHECK(max_abs_diff(matmul(a, b, ta, tb), reference_matmul(a, b, ta, tb)) < 1e-13);
      }
}

TEST_CASE("matmul broadcasts the batch axes") {
  SUBCASE("(2,3,4) @ (4,5): every batch element times the one matrix") {
    Tensor a = variable({2, 3, 4}, 3).detach(), b = variable({4, 5}, 4).detach();
    Tensor c = matmul(a, b);
    REQUIRE(c.shape() == Shape{2, 3, 5});
    for (int64_t i = 0; i < 2; ++i)
      CHECK(max_abs_diff(select(c, 0, i), matmul(select(a, 0, i), b)) < 1e-14);
  }
  SUBCASE("(2,1,3,4) @ (1,5,4,2): both operands repeat") {
    Tensor a = variable({2, 1, 3, 4}, 5).detach(), b = variable({1, 5, 4, 2}, 6).detach();
    Tensor c = matmul(a, b);
    REQUIRE(c.shape() == Shape{2, 5, 3, 2});
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        INFO("batch (", i, ", ", j, ")");
        Tensor want = matmul(select(select(a, 0, i), 0, 0), select(select(b, 0, 0), 0, j));
        CHECK(max_abs_diff(select(select(c, 0, i), 0, j), want) < 1e-14);
      }
  }
  SUBCASE("(3,4) @ (2,4,5): the unbatched a repeats") {
    Tensor a = variable({3, 4}, 7).detach(), b = variable({2, 4, 5}, 8).detach();
    Tensor c = matmul(a, b);
    REQUIRE(c.shape() == Shape{2, 3, 5});
    for (int64_t i = 0; i < 2; ++i)
      CHECK(max_abs_diff(select(c, 0, i), matmul(a, select(b, 0, i))) < 1e-14);
  }
  SUBCASE("(3,4) @ (1,1,4,5): size-1 batch axes of b still add leading axes") {
    Tensor a = variable({3, 4}, 9).detach(), b = variable({1, 1, 4, 5}, 10).detach();
    Tensor c = matmul(a, b);
    REQUIRE(c.shape() == Shape{1, 1, 3, 5});
    CHECK(max_abs_diff(c.reshape({3, 5}), matmul(a, b.reshape({4, 5}))) < 1e-14);
  }
}

TEST_CASE("matmul with an empty inner axis gives zeros, with an empty outer axis nothing") {
  Tensor c = matmul(zeros({2, 3, 0}, DType::f64), zeros({0, 4}, DType::f64));
  CHECK(c.shape() == Shape{2, 3, 4});
  CHECK(max(abs(c)).item() == 0.0);
  CHECK(matmul(zeros({0, 3}), zeros({3, 4})).shape() == Shape{0, 4});
  CHECK(matmul(zeros({2, 0, 3}), zeros({2, 3, 4}), false, false).shape() == Shape{2, 0, 4});
}

TEST_CASE("matmul counts 2*M*N*K FLOPs per batch element as matrix-product FLOPs") {
  FlopCounter folded;
  matmul(zeros({2, 3, 4}), zeros({4, 5}));
  CHECK(folded.matmul() == 2.0 * 2 * 3 * 4 * 5);
  CHECK(folded.total() == folded.matmul());
  FlopCounter looped;
  matmul(zeros({2, 1, 3, 4}), zeros({1, 5, 4, 2}));
  CHECK(looped.matmul() == 2.0 * 10 * 3 * 4 * 2);
}

// --- gradients -------------------------------------------------------------------------

TEST_CASE("matmul gradients pass gradcheck for every batch layout and both trans flags") {
  for (const auto& [ba, bb] : kBatchLayouts)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = variable(stored(ba, 3, 4, ta), 13), b = variable(stored(bb, 4, 2, tb), 14);
        expect_gradients(
            describe(a.shape(), b.shape(), ta, tb),
            [ta, tb](const std::vector<Tensor>& in) { return matmul(in[0], in[1], ta, tb); },
            {a, b});
      }
}

TEST_CASE("matmul gradients match the composed reference, with one operand frozen") {
  // (2,3,4) @ (4,5) is the folded path: dB comes from one gemm over the 6 folded rows.
  for (bool tb : {false, true}) {
    INFO("trans_b=", tb);
    Tensor a = variable({2, 3, 4}, 15), b = variable(stored({}, 4, 5, tb), 16);
    Tensor dc = variable({2, 3, 5}, 17).detach();
    matmul(a, b, false, tb).backward(dc);
    const Tensor da = a.grad(), db = b.grad();
    a.zero_grad();
    b.zero_grad();
    reference_matmul(a, b, false, tb).backward(dc);
    CHECK(max_abs_diff(da, a.grad()) < 1e-13);
    CHECK(max_abs_diff(db, b.grad()) < 1e-13);
  }
  Tensor a = variable({2, 3, 4}, 18), frozen = variable({4, 5}, 19).detach();
  sum(matmul(a, frozen)).backward();
  CHECK(a.grad().defined());
  CHECK(!frozen.grad().defined());
  Tensor b = variable({4, 5}, 20);
  sum(matmul(variable({2, 3, 4}, 21).detach(), b)).backward();
  CHECK(b.grad().shape() == Shape{4, 5});
}

// --- linear ----------------------------------------------------------------------------

TEST_CASE("linear gives x W^T + b on hand-computed numbers") {
  for (DType dt : {DType::f32, DType::f64}) {
    INFO(dtype_name(dt));
    Tensor x = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, dt);
    Tensor w = from_vector({1, 0, -1, 2, 1, 0}, {2, 3}, dt);  // (out=2, in=3)
    Tensor b = from_vector({10, -10}, {2}, dt);
    // rows of x dotted with rows of W: [1-3, 2+2; 4-6, 8+5] = [-2 4; -2 13]
    CHECK(linear(x, w).to_vector() == std::vector<double>{-2, 4, -2, 13});
    CHECK(linear(x, w, b).to_vector() == std::vector<double>{8, -6, 8, 3});
    CHECK(linear(x, w, b).shape() == Shape{2, 2});
  }
}

TEST_CASE("linear equals matmul(x, W, false, true) + b, bit for bit") {
  Rng rng(22);
  Tensor x = randn({5, 7, 16}, rng), w = randn({12, 16}, rng), b = randn({12}, rng);
  CHECK(max_abs_diff(linear(x, w, b), matmul(x, w, false, true) + b) == 0.0);
  CHECK(max_abs_diff(linear(x, w), matmul(x, w, false, true)) == 0.0);
}

TEST_CASE("linear on 3-D and 4-D input acts on the last axis of every token") {
  Tensor w = variable({3, 4}, 23).detach(), b = variable({3}, 24).detach();
  for (const Shape& shape : {Shape{4}, Shape{2, 5, 4}, Shape{2, 3, 2, 4}}) {
    INFO("x ", shape_str(shape));
    Tensor x = variable(shape, 25).detach();
    Tensor y = linear(x, w, b);
    Shape want = shape;
    want.back() = 3;
    REQUIRE(y.shape() == want);
    Tensor rows = linear(x.reshape({-1, 4}), w, b);
    CHECK(max_abs_diff(y.reshape({-1, 3}), rows) == 0.0);
    CHECK(max_abs_diff(y, reference_matmul(x.reshape({-1, 4}), w, false, true).reshape(want) + b) <
          1e-13);
  }
}

TEST_CASE("linear gradients pass gradcheck for x, weight and bias") {
  for (const Shape& shape : {Shape{3}, Shape{4, 3}, Shape{2, 4, 3}, Shape{2, 2, 3, 3}}) {
    Tensor x = variable(shape, 26), w = variable({5, 3}, 27), b = variable({5}, 28);
    expect_gradients(cat_str("linear with bias, x ", shape_str(shape)),
                     [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                     {x, w, b});
    expect_gradients(cat_str("linear without bias, x ", shape_str(shape)),
                     [](const std::vector<Tensor>& in) { return linear(in[0], in[1]); }, {x, w});
  }
}

TEST_CASE("linear records one node with an input per operand") {
  Tensor x = variable({2, 3, 4}, 29), w = variable({5, 4}, 30), b = variable({5}, 31);
  Tensor y = linear(x, w, b);
  REQUIRE(y.grad_fn());
  CHECK(std::string(y.grad_fn()->op) == "linear");
  CHECK(y.grad_fn()->inputs.size() == 3);
  CHECK(linear(x, w).grad_fn()->inputs.size() == 2);
  // Only the operands that need a gradient get one.
  Tensor frozen_w = w.detach();
  sum(linear(x, frozen_w, b)).backward();
  CHECK(x.grad().shape() == x.shape());
  CHECK(b.grad().to_vector() == std::vector<double>(5, 6.0));  // 6 rows, each dy = 1
  CHECK(!frozen_w.grad().defined());
}

TEST_CASE("linear counts 2*R*in*out matrix FLOPs plus R*out for the bias") {
  FlopCounter counter;
  linear(zeros({2, 3, 4}), zeros({5, 4}), zeros({5}));
  CHECK(counter.matmul() == 2.0 * 6 * 4 * 5);
  CHECK(counter.total() == 2.0 * 6 * 4 * 5 + 6 * 5);
}

TEST_CASE("linear and matmul gradients do not depend on the thread count") {
  Rng rng(32);
  Tensor x = randn({64, 33, 48}, rng).set_requires_grad();
  Tensor w = randn({40, 48}, rng).set_requires_grad(), b = randn({40}, rng).set_requires_grad();
  Tensor v = randn({64, 48, 40}, rng).set_requires_grad();
  Tensor dy = randn({64, 33, 40}, rng);
  std::vector<std::vector<double>> runs;
  const int threads = num_threads();
  for (int n : {1, 2}) {
    set_num_threads(n);
    for (Tensor t : {x, w, b, v}) t.zero_grad();
    (linear(x, w, b) + matmul(x, v)).backward(dy);
    std::vector<double> all;
    for (Tensor t : {x.grad(), w.grad(), b.grad(), v.grad()})
      for (double e : t.to_vector()) all.push_back(e);
    runs.push_back(all);
  }
  set_num_threads(threads);
  CHECK(runs[0] == runs[1]);
}

// --- bad input -------------------------------------------------------------------------

TEST_CASE("matmul rejects bad operands with the op, both shapes and the trans flags") {
  CHECK_THROWS_WITH_AS(matmul(zeros({3}), zeros({3, 2})),
                       doctest::Contains("matmul: both operands need rank >= 2 (a [3], b [3,2]"),
                       Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({4, 5})),
                       doctest::Contains("matmul: inner sizes differ: a [2,3], b [4,5], "
                                         "trans_a=false, trans_b=false, K=3 in a and K=4 in b"),
                       Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({4, 3}), true, false),
                       doctest::Contains("trans_a=true, trans_b=false, K=2 in a and K=4 in b"),
                       Error);
  CHECK_THROWS_WITH_AS(
      matmul(zeros({2, 3, 4}), zeros({3, 4, 5})),
      doctest::Contains("matmul: batch axes do not broadcast (a [2,3,4], b [3,4,5]"), Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({3, 2}, DType::f64)),
                       doctest::Contains("matmul: operands have dtypes float32 and float64 "
                                         "(a [2,3], b [3,2]"),
                       Error);
}

TEST_CASE("linear rejects bad shapes with the op and the shapes") {
  CHECK_THROWS_WITH_AS(linear(zeros({2, 3}), zeros({5, 4})),
                       doctest::Contains("linear: x's last axis is 3, expected in=4 (x [2,3], "
                                         "weight [5,4], bias none)"),
                       Error);
  CHECK_THROWS_WITH_AS(linear(zeros({2, 4}), zeros({5, 4}), zeros({4})),
                       doctest::Contains("linear: bias must be (out)=[5] (x [2,4], weight [5,4], "
                                         "bias [4])"),
                       Error);
  CHECK_THROWS_WITH_AS(linear(zeros({2, 4}), zeros({4})),
                       doctest::Contains("linear: weight must be (out, in) (x [2,4], weight [4]"),
                       Error);
  CHECK_THROWS_WITH_AS(linear(zeros({2, 4}), zeros({5, 4}, DType::f64)),
                       doctest::Contains("linear: x, weight and bias must share a dtype (x float32, "
                                         "weight float64)"),
                       Error);
  CHECK_THROWS_WITH_AS(linear(zeros({2, 4}), zeros({5, 4}), zeros({5}, DType::f64)),
                       doctest::Contains("must share a dtype (x float32, weight float32, bias "
                                         "float64)"),
                       Error);
}
