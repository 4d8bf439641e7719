#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "tests/engine/fixture_helpers.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_close;
using vg::testing::expect_gradients;
using vg::testing::fixture_tensor;
using vg::testing::load_fixture;
using vg::testing::variable;

namespace {

// softmax(q k^T / sqrt(D)) v from primitive ops (broadcast products and sums), no fusion.
Tensor reference_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), Tk = k.size(2), D = q.size(3);
  Tensor s =
      sum(q.reshape({B, H, T, 1, D}) * k.reshape({B, H, 1, Tk, D}), {-1}) / std::sqrt(double(D));
  Tensor e = exp(s - max(s, {-1}, true).detach());
  Tensor p = e / sum(e, {-1}, true);
  return sum(p.reshape({B, H, T, Tk, 1}) * v.reshape({B, H, 1, Tk, D}), {3});
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return max(abs(a - b)).item();
}

}  // namespace

TEST_CASE("attention rows of P sum to one (seen through V = identity)") {
  // With Tk == D and V = I in every head, the output is P itself.
  const int64_t B = 2, H = 2, T = 3, D = 4;
  Tensor q = variable({B, H, T, D}, 1).detach(), k = variable({B, H, D, D}, 2).detach();
  Tensor eye = zeros({B, H, D, D}, DType::f64);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < D; ++i) eye.set_at({b, h, i, i}, 1);
  Tensor p = scaled_dot_product_attention(q, k, eye);
  for (double s : sum(p, {-1}).to_vector()) CHECK(s == doctest::Approx(1.0).epsilon(1e-14));
  // P[0,1,2,:] by hand: softmax over j of q.k_j / 2
  double e[D], total = 0;
  for (int64_t j = 0; j < D; ++j) {
    double dot = 0;
    for (int64_t c = 0; c < D; ++c) dot += q.at({0, 1, 2, c}) * k.at({0, 1, j, c});
    total += e[j] = std::exp(dot / 2);
  }
  for (int64_t j = 0; j < D; ++j)
    CHECK(p.at({0, 1, 2, j}) == doctest::Approx(e[j] / total).epsilon(1e-13));
}

TEST_CASE("attention with V constant across tokens gives a constant output and zero dQ, dK") {
  Tensor q = variable({2, 3, 4, 5}, 3), k = variable({2, 3, 6, 5}, 4);
  Tensor row = variable({2, 3, 1, 5}, 5).detach();
  Tensor v = broadcast_to(row, {2, 3, 6, 5}).set_requires_grad();
  Tensor out = scaled_dot_product_attention(q, k, v);
  CHECK(max_abs_diff(out, broadcast_to(row, {2, 3, 4, 5})) < 1e-14);
  out.backward(variable({2, 3, 4, 5}, 6).detach());
  CHECK(max(abs(q.grad())).item() < 1e-14);
  CHECK(max(abs(k.grad())).item() < 1e-14);
  CHECK(max(abs(v.grad())).item() > 0.1);
}

TEST_CASE("attention matches the composed reference, forward and backward") {
  // (2, 2, 3, 5, 4): eight small heads; (1, 2, 128, 96, 32): two long ones.
  for (const auto& [T, Tk, D] : {std::tuple{3, 5, 4}, std::tuple{128, 96, 32}}) {
    INFO("T ", T, " Tk ", Tk, " D ", D);
    const int64_t B = T > 100 ? 1 : 2;
    Tensor q = variable({B, 2, T, D}, 7), k = variable({B, 2, Tk, D}, 8);
    Tensor v = variable({B, 2, Tk, D}, 9), dout = variable({B, 2, T, D}, 10).detach();
    scaled_dot_product_attention(q, k, v).backward(dout);
    const std::vector<Tensor> fused{q.grad(), k.grad(), v.grad()};
    for (Tensor t : {q, k, v}) t.zero_grad();
    Tensor ref = reference_attention(q, k, v);
    ref.backward(dout);
    CHECK(max_abs_diff(scaled_dot_product_attention(q, k, v), ref) < 1e-13);
    CHECK(max_abs_diff(fused[0], q.grad()) < 1e-13);
    CHECK(max_abs_diff(fused[1], k.grad()) < 1e-13);
    CHECK(max_abs_diff(fused[2], v.grad()) < 1e-13);
    // float32 against the float64 result
    Tensor out32 = scaled_dot_product_attention(
        q.detach().to(DType::f32), k.detach().to(DType::f32), v.detach().to(DType::f32));
    CHECK(max_abs_diff(out32.to(DType::f64), ref.detach()) < 1e-5);
  }
}

// Float heads take the engine's own product kernel (engine/kernels/blas.h gemm_small): the head
// sizes of the ViTs here (T = 17, 50, 65; D = 16, 32, 64) and a single token, against the
// float64 result, forward and every gradient.
TEST_CASE("attention in float matches float64 at the ViTs' head sizes") {
  for (int64_t T : {1, 17, 50, 65})
    for (int64_t D : {16, 32, 64}) {
      INFO("T ", T, " D ", D);
      Tensor q = variable({2, 2, T, D}, 21), k = variable({2, 2, T, D}, 22);
      Tensor v = variable({2, 2, T, D}, 23), dout = variable({2, 2, T, D}, 24).detach();
      scaled_dot_product_attention(q, k, v).backward(dout);
      Tensor q32 = q.detach().to(DType::f32).set_requires_grad();
      Tensor k32 = k.detach().to(DType::f32).set_requires_grad();
      Tensor v32 = v.detach().to(DType::f32).set_requires_grad();
      Tensor out32 = scaled_dot_product_attention(q32, k32, v32);
      out32.backward(dout.to(DType::f32));
      CHECK(max_abs_diff(out32.to(DType::f64), scaled_dot_product_attention(q, k, v).detach()) <
            1e-5);
      CHECK(max_abs_diff(q32.grad().to(DType::f64), q.grad()) < 1e-4);
      CHECK(max_abs_diff(k32.grad().to(DType::f64), k.grad()) < 1e-4);
      CHECK(max_abs_diff(v32.grad().to(DType::f64), v.grad()) < 1e-4);
    }
}

TEST_CASE("attention passes gradcheck for q, k and v, with T != Tk and T == Tk") {
  for (const auto& [T, Tk] : {std::pair{3, 5}, std::pair{4, 4}, std::pair{5, 2}}) {
    INFO("T ", T, " Tk ", Tk);
    Tensor q = variable({2, 2, T, 3}, 11), k = variable({2, 2, Tk, 3}, 12);
    Tensor v = variable({2, 2, Tk, 3}, 13);
    expect_gradients("scaled_dot_product_attention",
                     [](auto& in) { return scaled_dot_product_attention(in[0], in[1], in[2]); },
                     {q, k, v});
  }
}

TEST_CASE("attention gives the same bits with 1 and 2 threads") {
  // (4, 4, 50, 50, 16): many heads shared among threads; (1, 2, 200, 96, 32): one each.
  const int previous = num_threads();
  for (const auto& [B, H, T, Tk, D] :
       {std::tuple{4, 4, 50, 50, 16}, std::tuple{1, 2, 200, 96, 32}}) {
    INFO("B ", B, " H ", H, " T ", T, " Tk ", Tk, " D ", D);
    Tensor q = variable({B, H, T, D}, 14).detach().to(DType::f32);
    Tensor k = variable({B, H, Tk, D}, 15).detach().to(DType::f32);
    Tensor v = variable({B, H, Tk, D}, 16).detach().to(DType::f32);
    Tensor dout = variable({B, H, T, D}, 17).detach().to(DType::f32);
    auto run = [&](int threads) {
      set_num_threads(threads);
      for (Tensor t : {q, k, v}) t.set_requires_grad().zero_grad();
      Tensor out = scaled_dot_product_attention(q, k, v);
      out.backward(dout);
      return std::vector<std::vector<double>>{out.to_vector(), q.grad().to_vector(),
                                              k.grad().to_vector(), v.grad().to_vector()};
    };
    const auto one = run(1), two = run(2);
    CHECK(one == two);
  }
  set_num_threads(previous);
}

TEST_CASE("attention counts 4*B*H*T*Tk*D matmul FLOPs plus 5*B*H*T*Tk for the softmax") {
  Tensor q = zeros({2, 3, 4, 8}), kv = zeros({2, 3, 5, 8});
  FlopCounter counter;
  scaled_dot_product_attention(q, kv, kv);
  CHECK(counter.matmul() == 4.0 * 2 * 3 * 4 * 5 * 8);
  CHECK(counter.total() == 4.0 * 2 * 3 * 4 * 5 * 8 + 5.0 * 2 * 3 * 4 * 5);
}

TEST_CASE("attention rejects bad shapes and names all three") {
  Tensor q = zeros({2, 3, 4, 8}), k = zeros({2, 3, 5, 8}), v = zeros({2, 3, 5, 8});
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(zeros({3, 4, 8}), k, v),
                       "scaled_dot_product_attention: q, k and v must be (B, H, T, D) "
                       "(q [3,4,8], k [2,3,5,8], v [2,3,5,8])",
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, zeros({1, 3, 5, 8}), v),
                       doctest::Contains("differ in batch size B (q [2,3,4,8], k [1,3,5,8]"),
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, zeros({2, 2, 5, 8})),
                       doctest::Contains("differ in head count H"), Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, zeros({2, 3, 5, 4}), v),
                       doctest::Contains("differ in head dim D"), Error);
  CHECK_THROWS_WITH_AS(
      scaled_dot_product_attention(q, k, zeros({2, 3, 6, 8})),
      "scaled_dot_product_attention: k has 5 tokens and v has 6 (q [2,3,4,8], k [2,3,5,8], "
      "v [2,3,6,8])",
      Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v.to(DType::f64)),
                       doctest::Contains("float32, float32 and float64"), Error);
}

TEST_CASE("attention matches PyTorch") {
  const nlohmann::json fx = load_fixture("nn_ops.json");
  for (auto [dt, tol] : {std::pair{DType::f64, 1e-10}, std::pair{DType::f32, 1e-5}}) {
    INFO(dtype_name(dt));
    for (const auto& c : fx.at("attention")) {
      Tensor q = fixture_tensor(c["q"], dt).set_requires_grad();
      Tensor k = fixture_tensor(c["k"], dt).set_requires_grad();
      Tensor v = fixture_tensor(c["v"], dt).set_requires_grad();
      Tensor out = scaled_dot_product_attention(q, k, v);
      out.backward(fixture_tensor(c["dout"], dt));
      expect_close("attention out", out, c["out"], tol);
      expect_close("attention dq", q.grad(), c["dq"], tol);
      expect_close("attention dk", k.grad(), c["dk"], tol);
      expect_close("attention dv", v.grad(), c["dv"], tol);
    }
  }
}

TEST_CASE("qkv_attention equals the permute + select + attention it replaces, with gradients") {
  const int64_t B = 2, T = 5, H = 3, D = 4, C = H * D;
  for (DType dtype : {DType::f64, DType::f32}) {
    Tensor qkv = variable({B, T, 3 * C}, 11).to(dtype).detach();
    qkv.set_requires_grad(true);
    Tensor dout = variable({B, T, C}, 12).to(dtype).detach();
    Tensor fused = qkv_attention(qkv, H);
    fused.backward(dout);
    const Tensor fused_grad = qkv.grad();
    qkv.zero_grad();
    // timm: qkv.reshape(B, T, 3, H, D).permute(2, 0, 3, 1, 4), attention, transpose back.
    Tensor packed = permute(qkv.reshape({B, T, 3, H, D}), {2, 0, 3, 1, 4});
    Tensor ref = permute(scaled_dot_product_attention(select(packed, 0, 0), select(packed, 0, 1),
                                                      select(packed, 0, 2)),
                         {0, 2, 1, 3})
                     .reshape({B, T, C});
    ref.backward(dout);
    // The same products on the same numbers, read through other strides: the same bits.
    CHECK(fused.to_vector() == ref.to_vector());
    CHECK(fused_grad.to_vector() == qkv.grad().to_vector());
  }
}

TEST_CASE("qkv_attention passes gradcheck") {
  expect_gradients("qkv_attention", [](auto& in) { return qkv_attention(in[0], 2); },
                   {variable({2, 4, 3 * 6}, 13)});
}

TEST_CASE("qkv_attention gives the same bits with 1 and 2 threads") {
  const int previous = num_threads();
  for (const auto& [B, T, H, D] : {std::tuple{4, 50, 4, 16}, std::tuple{1, 200, 2, 32}}) {
    INFO("B ", B, " T ", T, " H ", H, " D ", D);
    Tensor qkv = variable({B, T, 3 * H * D}, 14).to(DType::f32).detach();
    qkv.set_requires_grad(true);
    auto run = [&](int threads) {
      set_num_threads(threads);
      qkv.zero_grad();
      Tensor out = qkv_attention(qkv, H);
      sum(out * out).backward();
      return std::vector<std::vector<double>>{out.to_vector(), qkv.grad().to_vector()};
    };
    const auto one = run(1), two = run(2);
    CHECK(one == two);
  }
  set_num_threads(previous);
}

TEST_CASE("qkv_attention rejects a last axis that is not 3 * heads * D") {
  CHECK_THROWS_WITH_AS(qkv_attention(zeros({2, 4, 20}), 3),
                       doctest::Contains("qkv must be (B, T, 3 * heads * D) with 3 heads"),
                       vg::Error);
  CHECK_THROWS_WITH_AS(qkv_attention(zeros({2, 0, 18}), 3), doctest::Contains("no tokens"),
                       vg::Error);
}
