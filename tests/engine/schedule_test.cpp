#include "engine/optim/schedule.h"

#include <doctest/doctest.h>

#include <cmath>

#include "engine/core/error.h"

using namespace vg;
using namespace vg::optim;
using nlohmann::json;

TEST_CASE("cosine with warmup follows timm, absolute t after warmup by default") {
  const double base = 5e-4, min_lr = 1e-5, init = 1e-6;
  const Schedule s = Schedule::cosine(base, 100, min_lr, 10, init);
  CHECK(s.lr(0) == init);
  CHECK(s.lr(5) == doctest::Approx(init + 5 * (base - init) / 10));
  // timm's pitfall: at t = warmup_t the cosine already reads cos(pi * 10 / 100)
  const double at_10 = min_lr + 0.5 * (base - min_lr) * (1 + std::cos(M_PI * 0.1));
  CHECK(s.lr(10) == doctest::Approx(at_10).epsilon(1e-14));
  CHECK(s.lr(10) < base);
  CHECK(s.lr(50) == doctest::Approx(min_lr + 0.5 * (base - min_lr)));
  CHECK(s.lr(99) > min_lr);
  CHECK(s.lr(100) == min_lr);
  CHECK(s.lr(1000) == min_lr);
  CHECK(s.multiplier(50) == doctest::Approx(s.lr(50) / base));

  const Schedule prefix = Schedule::cosine(base, 100, min_lr, 10, init, true);
  CHECK(prefix.lr(10) == base);  // the peak is reached exactly
  CHECK(prefix.lr(60) == doctest::Approx(min_lr + 0.5 * (base - min_lr)));
  CHECK(prefix.lr(109) > min_lr);
  CHECK(prefix.lr(110) == min_lr);

  const Schedule plain = Schedule::cosine(1.0, 4);
  CHECK(plain.lr(0) == 1.0);
  CHECK(plain.lr(2) == doctest::Approx(0.5));
  CHECK(plain.lr(4) == 0.0);
}

TEST_CASE("constant and step schedules") {
  const Schedule c = Schedule::constant(0.1);
  CHECK(c.lr(0) == 0.1);
  CHECK(c.lr(12345) == 0.1);
  const Schedule s = Schedule::step(1.0, 30, 0.1);
  CHECK(s.lr(0) == 1.0);
  CHECK(s.lr(29) == 1.0);
  CHECK(s.lr(30) == doctest::Approx(0.1));
  CHECK(s.lr(65) == doctest::Approx(0.01));
}

TEST_CASE("schedules round-trip through JSON and give the same values") {
  const Schedule schedules[] = {Schedule::constant(0.3), Schedule::step(0.1, 7, 0.5),
                                Schedule::cosine(5e-4, 200, 1e-5, 10, 1e-6, true)};
  for (const Schedule& s : schedules) {
    const json j = json::parse(s.to_json().dump());
    INFO(j.dump());
    const Schedule back = Schedule::from_json(j);
    CHECK(back.to_json() == s.to_json());
    for (int64_t t : {0, 1, 9, 10, 57, 150, 199, 250, 400}) CHECK(back.lr(t) == s.lr(t));
  }
}

TEST_CASE("schedule from_json and factories reject bad configurations, naming the field") {
  const auto fails = [](const json& j, const char* expected) {
    INFO("input: ", j.dump());
    CHECK_THROWS_WITH_AS(Schedule::from_json(j), doctest::Contains(expected), Error);
  };
  const json cosine = Schedule::cosine(1e-3, 100, 0, 5, 1e-6).to_json();
  json j = cosine;
  j["kind"] = "linear";
  fails(j, "unknown kind 'linear'");
  j = cosine;
  j.erase("t_initial");
  fails(j, "missing field 't_initial'");
  j = cosine;
  j["t_initial"] = 0;
  fails(j, "t_initial must be >= 1");
  j["t_initial"] = 10.5;
  fails(j, "'t_initial' must be an integer");
  j = cosine;
  j["min_lr"] = "0";
  fails(j, "'min_lr' must be a number");
  j = cosine;
  j["warmup_prefix"] = 0;
  fails(j, "warmup_prefix");
  j = cosine;
  j["gamma"] = 0.1;
  fails(j, "unknown field 'gamma'");
  j = cosine;
  j["base_lr"] = -1;
  fails(j, "base_lr");
  fails(json::array(), "expected an object");
  fails(json{{"base_lr", 1}}, "'kind'");
  fails(json{{"kind", "learnable_scaler"}, {"base_lr", 1}}, "unknown kind 'learnable_scaler'");
  CHECK_THROWS_WITH_AS(Schedule::step(0.1, 0), doctest::Contains("step_size"), Error);
  CHECK_THROWS_WITH_AS(Schedule::cosine(0.1, 10).lr(-1), doctest::Contains("t must be >= 0"),
                       Error);
}
