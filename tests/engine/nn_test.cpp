// Tests that span softmax, layer_norm, cross_entropy and dropout together (references,
// thread counts, bad input, PyTorch fixtures, anomaly mode); each op's own tests are in
// its <op>_test.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "tests/engine/fixture_helpers.h"
#include "tests/engine/gradcheck_helpers.h"
#include "tests/engine/nn_references.h"

using namespace vg;
using vg::testing::expect_close;
using vg::testing::fixture_tensor;
using vg::testing::load_fixture;
using vg::testing::reference_layer_norm;
using vg::testing::reference_softmax;
using vg::testing::variable;

TEST_CASE("layer_norm and softmax match their composed references") {
  Tensor x = variable({3, 4, 6}, 11), w = variable({6}, 12), b = variable({6}, 13);
  Tensor dy = variable({3, 4, 6}, 14).detach();
  layer_norm(x, w, b, 1e-5).backward(dy);
  const Tensor dx = x.grad(), dw = w.grad(), db = b.grad();
  for (Tensor t : {x, w, b}) t.zero_grad();
  reference_layer_norm(x, w, b, 1e-5).backward(dy);
  const std::vector<std::pair<Tensor, Tensor>> pairs{
      {dx, x.grad()}, {dw, w.grad()}, {db, b.grad()}};
  for (const auto& [fused, ref] : pairs) {
    CHECK(max(abs(fused - ref)).item() < 1e-12);
  }
  CHECK(max(abs(layer_norm(x, w, b, 1e-5) - reference_layer_norm(x, w, b, 1e-5))).item() < 1e-12);
  CHECK(max(abs(softmax(x) - reference_softmax(x))).item() < 1e-15);
}

TEST_CASE("layer_norm, softmax and cross_entropy give the same bits with 1 and 2 threads") {
  const int previous = num_threads();
  Tensor x = variable({3000, 48}, 15).detach().to(DType::f32);
  Tensor w = variable({48}, 16).detach().to(DType::f32),
         b = variable({48}, 17).detach().to(DType::f32);
  Tensor dy = variable({3000, 48}, 18).detach().to(DType::f32);
  std::vector<int32_t> labels(3000);
  for (int i = 0; i < 3000; ++i) labels[i] = i % 48;
  auto run = [&](int threads) {
    set_num_threads(threads);
    for (Tensor t : {x, w, b}) t.set_requires_grad().zero_grad();
    Tensor y = layer_norm(x, w, b);
    y.backward(dy);
    std::vector<std::vector<double>> r{y.to_vector(), x.grad().to_vector(), w.grad().to_vector(),
                                       b.grad().to_vector()};
    x.zero_grad();
    Tensor s = softmax(x);
    s.backward(dy);
    r.push_back(s.to_vector());
    r.push_back(x.grad().to_vector());
    x.zero_grad();
    Tensor loss = cross_entropy(x, labels, 0.1);
    loss.backward();
    r.push_back(loss.to_vector());
    r.push_back(x.grad().to_vector());
    return r;
  };
  const auto one = run(1), two = run(2);
  set_num_threads(previous);
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("result ", i);
    CHECK(one[i] == two[i]);
  }
}

TEST_CASE("nn ops reject bad input with the op name and the numbers") {
  Tensor z = zeros({4, 10}, DType::f64);
  CHECK_THROWS_WITH_AS(cross_entropy(zeros({2, 3, 4}), {0, 1}),
                       "cross_entropy: logits must be (B, K), got shape [2,3,4]", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(z, {0, 1, 2}),
                       "cross_entropy: 3 labels for a batch of 4 (logits shape [4,10])", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(z, {0, 10, 2, 3}),
                       doctest::Contains("label 10 at batch index 1 is outside [0, 10)"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(z, {0, 1, 2, -1}), doctest::Contains("label -1"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(z, {0, 1, 2, 3}, 1.5),
                       doctest::Contains("label_smoothing must be in [0, 1]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(z, zeros({4, 9}, DType::f64)),
                       doctest::Contains("targets of shape [4,9] do not match logits"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 4}), ones({5}), Tensor()),
                       "layer_norm: weight has shape [5], expected [4] (input shape [2,4])", Error);
  CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 4}), Tensor(), ones({4}, DType::f64)),
                       doctest::Contains("layer_norm: bias is float64"), Error);
  CHECK_THROWS_WITH_AS(softmax(full({}, 1.0)), doctest::Contains("softmax: input needs"), Error);
  Rng rng(30);
  CHECK_THROWS_WITH_AS(dropout(z, 1.0, rng),
                       doctest::Contains("dropout: p must be in [0, 1), got 1"), Error);
  CHECK_THROWS_AS(dropout(z, -0.1, rng), Error);
}

TEST_CASE("softmax, log_softmax, layer_norm and cross_entropy match PyTorch") {
  const nlohmann::json fx = load_fixture("nn_ops.json");
  for (auto [dt, tol] : {std::pair{DType::f64, 1e-10}, std::pair{DType::f32, 1e-5}}) {
    INFO(dtype_name(dt));
    auto in = [&](const nlohmann::json& j) {
      return j.is_null() ? Tensor() : fixture_tensor(j, dt).set_requires_grad();
    };
    for (const char* op : {"softmax", "log_softmax"}) {
      for (const auto& c : fx.at(op)) {
        Tensor x = in(c["x"]);
        Tensor y = std::string(op) == "softmax" ? softmax(x) : log_softmax(x);
        y.backward(fixture_tensor(c["dy"], dt));
        expect_close(std::string(op) + " y", y, c["y"], tol);
        expect_close(std::string(op) + " dx", x.grad(), c["dx"], tol);
      }
    }
    for (const auto& c : fx.at("layer_norm")) {
      Tensor x = in(c["x"]), w = in(c["weight"]), b = in(c["bias"]);
      Tensor y = layer_norm(x, w, b, c["eps"].get<double>());
      y.backward(fixture_tensor(c["dy"], dt));
      expect_close("layer_norm y", y, c["y"], tol);
      expect_close("layer_norm dx", x.grad(), c["dx"], tol);
      if (w.defined()) expect_close("layer_norm dweight", w.grad(), c["dweight"], tol);
      if (b.defined()) expect_close("layer_norm dbias", b.grad(), c["dbias"], tol);
    }
    for (const auto& c : fx.at("cross_entropy")) {
      Tensor z = in(c["logits"]);
      Tensor loss = cross_entropy(z, c["labels"].get<std::vector<int32_t>>(),
                                  c["label_smoothing"].get<double>());
      loss.backward();
      CHECK(loss.item() == doctest::Approx(c["loss"].get<double>()).epsilon(tol));
      expect_close("cross_entropy dlogits", z.grad(), c["dlogits"], tol);
    }
    for (const auto& c : fx.at("cross_entropy_soft")) {
      Tensor z = in(c["logits"]);
      Tensor loss = cross_entropy(z, fixture_tensor(c["targets"], dt));
      loss.backward();
      CHECK(loss.item() == doctest::Approx(c["loss"].get<double>()).epsilon(tol));
      expect_close("soft cross_entropy dlogits", z.grad(), c["dlogits"], tol);
    }
  }
}

TEST_CASE("nn ops and attention report NaN outputs in anomaly mode, even without grad") {
  Tensor bad = from_vector(std::vector<double>{1, NAN, 3, 4}, {2, 2});
  Tensor q = bad.reshape({1, 1, 2, 2});
  AnomalyGuard anomaly;
  CHECK_THROWS_WITH_AS(layer_norm(bad, Tensor(), Tensor()), doctest::Contains("layer_norm"), Error);
  CHECK_THROWS_WITH_AS(softmax(bad), doctest::Contains("softmax"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(bad, {0, 1}), doctest::Contains("cross_entropy"), Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, q, q),
                       doctest::Contains("scaled_dot_product_attention"), Error);
}
