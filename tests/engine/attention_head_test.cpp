#include "engine/kernels/attention_head.h"

#include <doctest/doctest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "engine/core/rng.h"

using namespace vg;

// Rows stored wider than D (ld = 3D, as in a packed qkv) check that the strides are honoured.
TEST_CASE("attention_head_forward is within 1e-12 of the plain loops in float64") {
  const int64_t Tq = 5, Tk = 7, D = 4, ld = 3 * D;
  Rng rng(11);
  std::vector<double> q(Tq * ld), k(Tk * ld), v(Tk * ld);
  for (auto* m : {&q, &k, &v})
    for (double& x : *m) x = rng.normal();
  const double scale = 1.0 / std::sqrt(double(D));
  std::vector<double> p(Tq * Tk), p_ref(Tq * Tk), o(Tq * D), o_ref(Tq * D);
  kernels::attention_head_forward<double>({q.data(), ld}, {k.data(), ld}, {v.data(), ld},
                                          p.data(), {o.data(), D}, Tq, Tk, D, scale);
  kernels::attention_head_forward_reference<double>({q.data(), ld}, {k.data(), ld},
                                                    {v.data(), ld}, p_ref.data(),
                                                    {o_ref.data(), D}, Tq, Tk, D, scale);
  for (int64_t i = 0; i < Tq * Tk; ++i) {
    INFO("P element ", i, ": kernel ", p[i], ", reference ", p_ref[i]);
    REQUIRE(std::abs(p[i] - p_ref[i]) < 1e-12);
  }
  for (int64_t i = 0; i < Tq * D; ++i) {
    INFO("O element ", i, ": kernel ", o[i], ", reference ", o_ref[i]);
    REQUIRE(std::abs(o[i] - o_ref[i]) < 1e-12);
  }
}

TEST_CASE("attention_head_backward gives dV = P^T dO and leaves out what is not asked for") {
  const int64_t Tq = 3, Tk = 4, D = 2;
  Rng rng(12);
  std::vector<double> q(Tq * D), k(Tk * D), v(Tk * D), dout(Tq * D);
  for (auto* m : {&q, &k, &v, &dout})
    for (double& x : *m) x = rng.normal();
  std::vector<double> p(Tq * Tk), o(Tq * D), ds(Tq * Tk), dv(Tk * D);
  kernels::attention_head_forward<double>({q.data(), D}, {k.data(), D}, {v.data(), D}, p.data(),
                                          {o.data(), D}, Tq, Tk, D, 0.5);
  kernels::attention_head_backward<double>({q.data(), D}, {k.data(), D}, {v.data(), D}, p.data(),
                                           {dout.data(), D}, {nullptr, D}, {nullptr, D},
                                           {dv.data(), D}, ds.data(), Tq, Tk, D, 0.5);
  for (int64_t j = 0; j < Tk; ++j)
    for (int64_t d = 0; d < D; ++d) {
      double plain = 0;
      for (int64_t i = 0; i < Tq; ++i) plain += p[i * Tk + j] * dout[i * D + d];
      CHECK(std::abs(dv[j * D + d] - plain) < 1e-12);
    }
}

// Strided inputs and outputs (ld = 3D), as the op passes them from a packed qkv.
TEST_CASE("attention_head_backward gives dQ, dK and dV within 1e-12 of the plain loops") {
  const int64_t Tq = 5, Tk = 6, D = 3, ld = 3 * D;
  const double scale = 1.0 / std::sqrt(double(D));
  Rng rng(13);
  std::vector<double> q(Tq * ld), k(Tk * ld), v(Tk * ld), dout(Tq * D);
  for (auto* m : {&q, &k, &v, &dout})
    for (double& x : *m) x = rng.normal();
  std::vector<double> p(Tq * Tk), o(Tq * D), ds(Tq * Tk);
  kernels::attention_head_forward<double>({q.data(), ld}, {k.data(), ld}, {v.data(), ld},
                                          p.data(), {o.data(), D}, Tq, Tk, D, scale);
  std::vector<double> dq(Tq * ld), dk(Tk * ld), dv(Tk * ld);
  std::vector<double> dq_ref(Tq * ld), dk_ref(Tk * ld), dv_ref(Tk * ld);
  kernels::attention_head_backward<double>({q.data(), ld}, {k.data(), ld}, {v.data(), ld},
                                           p.data(), {dout.data(), D}, {dq.data(), ld},
                                           {dk.data(), ld}, {dv.data(), ld}, ds.data(), Tq, Tk, D,
                                           scale);
  kernels::attention_head_backward_reference<double>(
      {q.data(), ld}, {k.data(), ld}, {v.data(), ld}, p.data(), {dout.data(), D},
      {dq_ref.data(), ld}, {dk_ref.data(), ld}, {dv_ref.data(), ld}, Tq, Tk, D, scale);
  for (auto [name, got, want] : {std::tuple{"dQ", &dq, &dq_ref}, std::tuple{"dK", &dk, &dk_ref},
                                 std::tuple{"dV", &dv, &dv_ref}})
    for (size_t i = 0; i < got->size(); ++i) {
      INFO(name, " element ", i, ": kernel ", (*got)[i], ", reference ", (*want)[i]);
      REQUIRE(std::abs((*got)[i] - (*want)[i]) < 1e-12);
    }
}
