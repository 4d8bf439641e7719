#include "tools/svg_chart.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engine/core/error.h"
#include "tests/tools/xml_check.h"
#include "tools/chart_scales.h"

using namespace vg::tools;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The "x,y" pairs of every polyline, in order.
std::vector<size_t> polyline_sizes(const std::string& svg) {
  std::vector<size_t> sizes;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1)) {
    const size_t begin = svg.find("points=\"", at) + 8, end = svg.find('"', begin);
    std::istringstream points(svg.substr(begin, end - begin));
    size_t n = 0;
    for (std::string pair; points >> pair;) ++n;
    sizes.push_back(n);
  }
  return sizes;
}

void check_ticks(const std::vector<double>& got, const std::vector<double>& want) {
  std::ostringstream shown;
  for (double t : got) shown << t << " ";
  INFO("ticks: " << shown.str());
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
}

Series line(std::string label, std::vector<double> x, std::vector<double> y) {
  Series s;
  s.label = std::move(label);
  s.x = std::move(x);
  s.y = std::move(y);
  return s;
}

}  // namespace

TEST_CASE("linear ticks step by 1, 2 or 5 times a power of ten and stay inside the range") {
  check_ticks(linear_ticks(0, 0.93), {0, 0.2, 0.4, 0.6, 0.8});
  check_ticks(linear_ticks(0, 100), {0, 20, 40, 60, 80, 100});
  check_ticks(linear_ticks(-1, 1), {-1, -0.5, 0, 0.5, 1});
  check_ticks(linear_ticks(0.31, 2.34), {0.5, 1, 1.5, 2});
  check_ticks(linear_ticks(0, 4690, 6), {0, 1000, 2000, 3000, 4000});
  check_ticks(linear_ticks(1e-5, 5.2e-4), {1e-4, 2e-4, 3e-4, 4e-4, 5e-4});
}

TEST_CASE("linear ticks of an empty range are the one value") {
  check_ticks(linear_ticks(3, 3), {3});
}

TEST_CASE("log ticks are the decades inside the range") {
  check_ticks(log_ticks(1e-6, 0.1), {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1});
  check_ticks(log_ticks(2e-4, 0.05), {1e-3, 1e-2});
  // Twenty decades: every third one, so the labels do not collide.
  const auto wide = log_ticks(1e-20, 1);
  CHECK(wide.size() <= 8);
  CHECK(wide.front() == doctest::Approx(1e-20));
  CHECK_THROWS_AS(log_ticks(0, 1), vg::Error);
}

TEST_CASE("downsampling keeps the ends and the spikes, and at most max_points") {
  std::vector<double> y(100000, 1.0);
  y[12345] = 50;  // a loss spike
  y[67890] = -3;
  const auto keep = downsample_indices(y, 2000);
  CHECK(keep.size() <= 2000);
  CHECK(keep.front() == 0);
  CHECK(keep.back() == y.size() - 1);
  CHECK(std::is_sorted(keep.begin(), keep.end()));
  CHECK(std::find(keep.begin(), keep.end(), size_t{12345}) != keep.end());
  CHECK(std::find(keep.begin(), keep.end(), size_t{67890}) != keep.end());
  CHECK(downsample_indices({1, 2, 3}, 2000).size() == 3);
}

TEST_CASE("render_svg writes well-formed SVG with one polyline per series and the legend") {
  ChartSpec spec;
  spec.title = "Loss <run & co>";
  spec.x_label = "step";
  spec.y_label = "loss";
  const std::vector<Series> series = {line("train", {0, 1, 2, 3}, {2.3, 1.1, 0.7, 0.5}),
                                      line("test \"held out\"", {1, 3}, {0.9, 0.6})};
  const std::string svg = render_svg(spec, series);
  INFO(svg);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.size() >= 7);
  CHECK(svg.compare(svg.size() - 7, 7, "</svg>\n") == 0);
  CHECK(vg::testing::xml_problem(svg) == "");
  CHECK(count(svg, "<polyline") == 2);
  CHECK(polyline_sizes(svg) == std::vector<size_t>{4, 2});
  CHECK(svg.find(">train<") != std::string::npos);
  CHECK(svg.find("test &quot;held out&quot;") != std::string::npos);
  CHECK(svg.find("Loss &lt;run &amp; co&gt;") != std::string::npos);
  CHECK(svg.find("width=\"800\" height=\"500\"") != std::string::npos);
}

TEST_CASE("render_svg skips NaN and Inf points and draws a lone point as a marker") {
  const double nan = std::nan(""), inf = INFINITY;
  const std::string svg = render_svg(
      ChartSpec{}, {line("a", {0, 1, 2, 3, nan}, {1, nan, inf, 2, 5}), line("b", {7}, {1.5})});
  CHECK(vg::testing::xml_problem(svg) == "");
  CHECK(polyline_sizes(svg) == std::vector<size_t>{2, 1});
  CHECK(count(svg, "<circle") == 1);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
}

TEST_CASE("render_svg on a log axis labels decades and skips values that are not positive") {
  ChartSpec spec;
  spec.log_y = true;
  const std::string svg = render_svg(spec, {line("gamma", {0, 1, 2, 3}, {0, 1e-6, 1e-3, 0.08})});
  CHECK(vg::testing::xml_problem(svg) == "");
  CHECK(polyline_sizes(svg) == std::vector<size_t>{3});
  for (const char* exponent : {"\u22126<", "\u22124<", "\u22121<"}) {
    INFO(std::string(exponent));
    CHECK(svg.find(exponent) != std::string::npos);
  }
}

TEST_CASE("render_svg labels linear ticks with the digits the step needs") {
  const std::string svg = render_svg(ChartSpec{}, {line("acc", {0, 4690}, {0.0, 0.93})});
  for (const char* label : {">0<", ">0.4<", ">0.8<", ">2000<", ">4000<"}) {
    INFO(std::string(label));
    CHECK(svg.find(label) != std::string::npos);
  }
}

TEST_CASE("render_svg thins long series to at most 2000 points") {
  std::vector<double> x(50000), y(50000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = i, y[i] = (i * 7919 % 1000) / 1000.0;  // noise
  const auto sizes = polyline_sizes(render_svg(ChartSpec{}, {line("long", x, y)}));
  REQUIRE(sizes.size() == 1);
  CHECK(sizes[0] <= kMaxPointsPerSeries);
  CHECK(sizes[0] >= kMaxPointsPerSeries / 2);
}

TEST_CASE("render_svg draws a smooth curve with few points") {
  std::vector<double> x(5000), y(5000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = i, y[i] = std::exp(-1e-3 * i);
  const auto sizes = polyline_sizes(render_svg(ChartSpec{}, {line("smooth", x, y)}));
  REQUIRE(sizes.size() == 1);
  CHECK(sizes[0] < 100);
}

TEST_CASE("render_svg draws colour bars and legend keys, and ids differ between charts") {
  ChartSpec spec;
  spec.log_y = true;
  spec.legend_keys = {{"ls1 (attention)", "#555", false}, {"ls2 (MLP)", "#555", true}};
  spec.colour_bars = {{"depth", {ramp_colour(0), ramp_colour(1)}, "block 0", "block 11"}};
  spec.title = "one";
  const std::string a = render_svg(spec, {line("", {0, 1}, {1e-4, 1e-2})});
  spec.title = "two";
  const std::string b = render_svg(spec, {line("", {0, 1}, {1e-4, 1e-2})});
  CHECK(vg::testing::xml_problem(a) == "");
  for (const char* text :
       {"ls1 (attention)", "ls2 (MLP)", ">depth<", "block 0", "block 11", "<linearGradient"}) {
    INFO(std::string(text));
    CHECK(a.find(text) != std::string::npos);
  }
  auto id = [](const std::string& svg) {
    const size_t at = svg.find("clipPath id=\"") + 13;
    return svg.substr(at, svg.find('"', at) - at);
  };
  CHECK(id(a) != id(b));
}

TEST_CASE("render_svg with no plottable point draws empty axes") {
  const std::string svg = render_svg(ChartSpec{}, {line("none", {0}, {std::nan("")})});
  CHECK(vg::testing::xml_problem(svg) == "");
  CHECK(count(svg, "<polyline") == 0);
}

TEST_CASE("render_svg rejects mismatched series and impossible sizes") {
  CHECK_THROWS_WITH_AS(render_svg(ChartSpec{}, {line("bad", {0, 1}, {1})}),
                       doctest::Contains("series 'bad' has 2 x values but 1 y values"), vg::Error);
  ChartSpec tiny;
  tiny.width = 10;
  CHECK_THROWS_WITH_AS(render_svg(tiny, {}), doctest::Contains("chart size 10x500"), vg::Error);
}

TEST_CASE("colour ramps run from light to dark and palette colours differ") {
  auto lightness = [](const std::string& hex) {
    const long v = std::stol(hex.substr(1), nullptr, 16);
    return ((v >> 16) & 255) + ((v >> 8) & 255) + (v & 255);
  };
  for (size_t hue = 0; hue < 4; ++hue) {
    INFO("hue " << hue);
    CHECK(lightness(ramp_colour(0, hue)) > lightness(ramp_colour(0.5, hue)));
    CHECK(lightness(ramp_colour(0.5, hue)) > lightness(ramp_colour(1, hue)));
  }
  CHECK(ramp_colour(-1) == ramp_colour(0));
  CHECK(palette_colour(0) != palette_colour(1));
}
