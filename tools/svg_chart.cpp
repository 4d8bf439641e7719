#include "tools/svg_chart.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "engine/core/error.h"
#include "tools/chart_scales.h"

namespace vg::tools {
namespace {

constexpr double kFontSize = 12, kTitleSize = 16, kRowHeight = 18, kSampleWidth = 28;
const char* kTextColour = "#333333";
const char* kTickColour = "#555555";
const char* kGridColour = "#e6e6e6";
const char* kMinorGridColour = "#f3f3f3";

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Coordinates with one decimal: sub-pixel precision at a fraction of the file size.
std::string coord(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 1);
  std::string s(buf, r.ptr);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

size_t code_points(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

// SVG cannot measure text; an average glyph of 0.6 em is close enough for sans-serif.
double text_width(const std::string& s, double font_size) {
  return 0.6 * font_size * code_points(s);
}

// Cuts a label to about max_width pixels with an ellipsis in the middle: run names share
// prefixes and differ at the end ("...-seed1 train", "...-seed1 test").
std::string fit(const std::string& s, double max_width, double font_size) {
  if (text_width(s, font_size) <= max_width) return s;
  std::vector<std::string> chars;  // whole UTF-8 sequences
  for (char c : s) {
    if ((c & 0xC0) != 0x80 || chars.empty()) chars.emplace_back();
    chars.back() += c;
  }
  const size_t keep = std::max<double>(2, max_width / (0.6 * font_size) - 1);
  const size_t tail = keep / 2, head = keep - tail;
  std::string out;
  for (size_t i = 0; i < head; ++i) out += chars[i];
  out += "\u2026";
  for (size_t i = chars.size() - tail; i < chars.size(); ++i) out += chars[i];
  return out;
}

// "0.25", "1500", or "2e-6" when fixed notation would need too many digits.
std::string tick_label(double v, double step) {
  if (std::abs(v) < step * 1e-6) return "0";
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  char buf[64];
  if (decimals <= 5 && std::abs(v) < 1e7) {
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
    return std::string(buf, r.ptr);
  }
  if (v == 0) return "0";
  int e = static_cast<int>(std::floor(std::log10(std::abs(v))));
  double m = std::round(v / std::pow(10.0, e) * 100) / 100;
  if (std::abs(m) >= 10) m /= 10, ++e;
  auto r = std::to_chars(buf, buf + sizeof buf, m);
  return std::string(buf, r.ptr) + "e" + std::to_string(e);
}

// 10 with a raised exponent, using a true minus sign.
std::string decade_label(double v) {
  const int e = static_cast<int>(std::lround(std::log10(v)));
  const std::string exponent = (e < 0 ? "\u2212" : "") + std::to_string(std::abs(e));
  return "10<tspan dy=\"-6\" font-size=\"9\">" + exponent + "</tspan>";
}

// FNV-1a: ids unique per chart, so several charts can be inlined in one HTML page.
std::string chart_id(const ChartSpec& spec, const std::vector<Series>& series) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  };
  mix(spec.title);
  for (const Series& s : series) mix(s.label + s.colour + std::to_string(s.x.size()));
  std::ostringstream id;
  id << "vg" << std::hex << (h & 0xffffffffu);
  return id.str();
}

struct Point {
  double x, y;
};

// The plottable points of a series, thinned to kMaxPointsPerSeries.
std::vector<Point> plottable(const Series& s, bool log_y) {
  check(s.x.size() == s.y.size(), "render_svg: series '", s.label, "' has ", s.x.size(),
        " x values but ", s.y.size(), " y values");
  std::vector<Point> kept;
  for (size_t i = 0; i < s.x.size(); ++i)
    if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]) && (!log_y || s.y[i] > 0))
      kept.push_back({s.x[i], s.y[i]});
  if (kept.size() <= kMaxPointsPerSeries) return kept;
  std::vector<double> y(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) y[i] = kept[i].y;
  std::vector<Point> thin;
  for (size_t i : downsample_indices(y, kMaxPointsPerSeries)) thin.push_back(kept[i]);
  return thin;
}

// Ramer-Douglas-Peucker in pixels: drops points that move the drawn line by less than
// `tolerance`, which shrinks smooth curves (gammas, lr) to a few dozen points each.
std::vector<Point> simplify(const std::vector<Point>& p, double tolerance) {
  if (p.size() < 3) return p;
  std::vector<char> keep(p.size(), 0);
  keep.front() = keep.back() = 1;
  std::vector<std::pair<size_t, size_t>> todo = {{0, p.size() - 1}};
  while (!todo.empty()) {
    const auto [a, b] = todo.back();
    todo.pop_back();
    const double dx = p[b].x - p[a].x, dy = p[b].y - p[a].y, len2 = dx * dx + dy * dy;
    double worst = -1;
    size_t at = a;
    for (size_t i = a + 1; i < b; ++i) {
      // Distance to the segment, not the infinite line, so spikes along it survive.
      const double t =
          len2 > 0 ? std::clamp(((p[i].x - p[a].x) * dx + (p[i].y - p[a].y) * dy) / len2, 0.0, 1.0)
                   : 0.0;
      const double d = std::hypot(p[i].x - p[a].x - t * dx, p[i].y - p[a].y - t * dy);
      if (d > worst) worst = d, at = i;
    }
    if (worst > tolerance) {
      keep[at] = 1;
      todo.push_back({a, at});
      todo.push_back({at, b});
    }
  }
  std::vector<Point> out;
  for (size_t i = 0; i < p.size(); ++i)
    if (keep[i]) out.push_back(p[i]);
  return out;
}

// Opacities and gradient offsets: two decimals.
std::string coord_fine(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 2);
  return std::string(buf, r.ptr);
}


// Where the data goes: value ranges, ticks and the plot box in pixels.
struct Frame {
  double left, right, top, bottom;
  double x_min, x_max, y_lo, y_hi;
  bool log_y;
  std::vector<double> x_ticks, y_ticks, y_minor;
  double x_step, y_step;

  double px(double x) const { return left + (x - x_min) / (x_max - x_min) * (right - left); }
  double py(double y) const {
    const double f =
        log_y ? (std::log10(y) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo))
              : (y - y_lo) / (y_hi - y_lo);
    return bottom - f * (bottom - top);
  }
  std::string y_label(double v) const { return log_y ? decade_label(v) : tick_label(v, y_step); }
  double y_label_width(double v) const {
    if (!log_y) return text_width(tick_label(v, y_step), kFontSize);
    return text_width("10", kFontSize) + text_width(std::to_string(std::lround(std::log10(v))), 9);
  }
};

std::string svg_line(double x1, double y1, double x2, double y2) {
  return "<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) + "\" y2=\"" +
         coord(y2) + "\"/>\n";
}

// The y range and ticks of the data; the x range, whose ticks wait for the plot width.
void set_ranges(Frame& f, const std::vector<std::vector<Point>>& points, double height) {
  double x_min = INFINITY, x_max = -INFINITY, y_min = INFINITY, y_max = -INFINITY;
  for (const auto& line : points)
    for (const Point& p : line) {
      x_min = std::min(x_min, p.x), x_max = std::max(x_max, p.x);
      y_min = std::min(y_min, p.y), y_max = std::max(y_max, p.y);
    }
  if (!std::isfinite(x_min))
    x_min = 0, x_max = 1, y_min = f.log_y ? 1 : 0, y_max = f.log_y ? 10 : 1;
  if (x_max == x_min) x_min -= 1, x_max += 1;
  // Steps counted from 1 (or a few) still read best on an axis that starts at 0.
  if (x_min > 0 && x_min <= 0.05 * (x_max - x_min)) x_min = 0;
  f.x_min = x_min, f.x_max = x_max;
  if (f.log_y) {
    // A margin of 3% in log space; a range too narrow to hold two decades grows to whole
    // decades, so every log axis has at least two labelled ticks.
    const double pad = std::pow(10.0, 0.03 * std::log10(y_max / y_min));
    f.y_lo = y_min / pad, f.y_hi = y_max * pad;
    if (log_ticks(f.y_lo, f.y_hi).size() < 2) {
      f.y_lo = std::pow(10.0, std::floor(std::log10(y_min) + 1e-9));
      f.y_hi = std::pow(10.0, std::ceil(std::log10(y_max) - 1e-9));
      if (f.y_hi <= f.y_lo) f.y_hi = f.y_lo * 10;
    }
    f.y_ticks = log_ticks(f.y_lo, f.y_hi);
    if (f.y_ticks.size() <= 4)  // minor lines at 2..9 times each decade, while they are sparse
      for (double d = std::pow(10.0, std::floor(std::log10(f.y_lo))); d < f.y_hi; d *= 10)
        for (int k = 2; k <= 9; ++k)
          if (k * d > f.y_lo && k * d < f.y_hi) f.y_minor.push_back(k * d);
  } else {
    const double pad =
        y_max > y_min ? 0.05 * (y_max - y_min) : std::max(std::abs(y_max) * 0.1, 1e-12);
    f.y_lo = y_min - pad, f.y_hi = y_max + pad;
    f.y_ticks = linear_ticks(f.y_lo, f.y_hi, std::max(3, static_cast<int>((height - 100) / 70)));
  }
  f.y_step = f.y_ticks.size() > 1 ? f.y_ticks[1] - f.y_ticks[0] : 1;
}

void write_axes(std::ostream& o, const Frame& f) {
  o << "<g stroke=\"" << kMinorGridColour << "\" stroke-width=\"1\">\n";
  for (double v : f.y_minor) o << svg_line(f.left, f.py(v), f.right, f.py(v));
  o << "</g>\n<g stroke=\"" << kGridColour << "\" stroke-width=\"1\">\n";
  for (double v : f.y_ticks) o << svg_line(f.left, f.py(v), f.right, f.py(v));
  for (double v : f.x_ticks) o << svg_line(f.px(v), f.top, f.px(v), f.bottom);
  o << "</g>\n<g stroke=\"" << kTickColour << "\" stroke-width=\"1\">\n";
  o << svg_line(f.left, f.top, f.left, f.bottom) << svg_line(f.left, f.bottom, f.right, f.bottom);
  for (double v : f.y_ticks) o << svg_line(f.left - 5, f.py(v), f.left, f.py(v));
  for (double v : f.x_ticks) o << svg_line(f.px(v), f.bottom, f.px(v), f.bottom + 5);
  o << "</g>\n<g fill=\"" << kTickColour << "\">\n";
  for (double v : f.y_ticks)
    o << "<text x=\"" << coord(f.left - 8) << "\" y=\"" << coord(f.py(v) + 4)
      << "\" text-anchor=\"end\">" << f.y_label(v) << "</text>\n";
  for (double v : f.x_ticks)
    o << "<text x=\"" << coord(f.px(v)) << "\" y=\"" << coord(f.bottom + 19)
      << "\" text-anchor=\"middle\">" << tick_label(v, f.x_step) << "</text>\n";
  o << "</g>\n";
}

void write_titles(std::ostream& o, const Frame& f, const ChartSpec& spec) {
  const double W = spec.width, mid = (f.left + f.right) / 2;
  o << "<g fill=\"" << kTextColour << "\">\n";
  if (!spec.title.empty()) {
    // Centred over the plot, but never past the edges of the picture.
    const double bold_size = 1.1 * kTitleSize;  // bold glyphs are wider
    const std::string title = fit(spec.title, W - 20, bold_size);
    const double half = text_width(title, bold_size) / 2;
    const double centre = std::clamp(mid, 10 + half, std::max(10 + half, W - 10 - half));
    o << "<text x=\"" << coord(centre) << "\" y=\"30\" text-anchor=\"middle\" font-size=\""
      << kTitleSize << "\" font-weight=\"bold\">" << escape(title) << "</text>\n";
  }
  if (!spec.x_label.empty())
    o << "<text x=\"" << coord(mid) << "\" y=\"" << coord(spec.height - 14)
      << "\" text-anchor=\"middle\">" << escape(spec.x_label) << "</text>\n";
  if (!spec.y_label.empty())
    o << "<text transform=\"translate(18," << coord((f.top + f.bottom) / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(spec.y_label) << "</text>\n";
  o << "</g>\n";
}

void write_lines(std::ostream& o, const Frame& f, const std::vector<Series>& series,
                 const std::vector<std::vector<Point>>& points, const std::string& id) {
  o << "<g clip-path=\"url(#" << id
    << "-plot)\" fill=\"none\" stroke-width=\"1.5\" stroke-linejoin=\"round\" "
       "stroke-linecap=\"round\">\n";
  // Sparse series with markers (one value per epoch) go on top of the dense per-step lines.
  for (const bool on_top : {false, true})
    for (size_t i = 0; i < series.size(); ++i) {
      const Series& s = series[i];
      if (points[i].empty() || s.markers != on_top) continue;
      std::vector<Point> pixels;
      for (const Point& p : points[i]) pixels.push_back({f.px(p.x), f.py(p.y)});
      o << "<polyline stroke=\"" << escape(s.colour) << "\""
        << (s.dashed ? " stroke-dasharray=\"6 4\"" : "");
      if (s.opacity < 1) o << " stroke-opacity=\"" << coord_fine(s.opacity) << "\"";
      o << " points=\"";
      const std::vector<Point> line = simplify(pixels, 0.25);
      for (size_t j = 0; j < line.size(); ++j)
        o << (j ? " " : "") << coord(line[j].x) << "," << coord(line[j].y);
      o << "\"/>\n";
      if (s.markers || pixels.size() == 1) {
        o << "<g fill=\"" << escape(s.colour) << "\" stroke=\"none\">";
        for (const Point& p : pixels)
          o << "<circle cx=\"" << coord(p.x) << "\" cy=\"" << coord(p.y) << "\" r=\"3\"/>";
        o << "</g>\n";
      }
    }
  o << "</g>\n";
}

// Labelled series, then style keys, then colour bars; "+N more" when the rows do not fit.
void write_legend(std::ostream& o, const Frame& f, const ChartSpec& spec,
                  const std::vector<Series>& series, double width, const std::string& id) {
  std::vector<LegendKey> rows;
  std::vector<const Series*> row_series;  // null for a style key
  for (const Series& s : series)
    if (!s.label.empty()) rows.push_back({s.label, s.colour, s.dashed}), row_series.push_back(&s);
  for (const LegendKey& k : spec.legend_keys) rows.push_back(k), row_series.push_back(nullptr);
  const double lx = f.right + 16, bars_h = 48.0 * spec.colour_bars.size();
  const size_t fit_rows = std::max(1.0, std::floor((f.bottom - f.top - bars_h) / kRowHeight));
  const size_t shown = rows.size() <= fit_rows ? rows.size() : fit_rows - 1;
  double ly = f.top + 6;
  o << "<g fill=\"" << kTextColour << "\">\n";
  for (size_t r = 0; r < shown; ++r, ly += kRowHeight) {
    const bool marker = row_series[r] && row_series[r]->markers;
    const double opacity = row_series[r] ? row_series[r]->opacity : 1.0;
    o << "<line x1=\"" << coord(lx) << "\" x2=\"" << coord(lx + kSampleWidth) << "\" y1=\""
      << coord(ly) << "\" y2=\"" << coord(ly) << "\" stroke=\"" << escape(rows[r].colour)
      << "\" stroke-width=\"2\"" << (rows[r].dashed ? " stroke-dasharray=\"6 4\"" : "");
    if (opacity < 1) o << " stroke-opacity=\"" << coord_fine(opacity) << "\"";
    o << "/>";
    if (marker)
      o << "<circle cx=\"" << coord(lx + kSampleWidth / 2) << "\" cy=\"" << coord(ly)
        << "\" r=\"3\" fill=\"" << escape(rows[r].colour) << "\"/>";
    o << "<text x=\"" << coord(lx + kSampleWidth + 6) << "\" y=\"" << coord(ly + 4) << "\">"
      << escape(fit(rows[r].label, width - kSampleWidth - 6, kFontSize)) << "</text>\n";
  }
  if (shown < rows.size()) {
    o << "<text x=\"" << coord(lx) << "\" y=\"" << coord(ly + 4) << "\" fill=\"" << kTickColour
      << "\">+" << rows.size() - shown << " more</text>\n";
    ly += kRowHeight;
  }
  for (size_t b = 0; b < spec.colour_bars.size(); ++b, ly += 48) {
    const ColourBar& bar = spec.colour_bars[b];
    const double bw = std::min(width, 160.0);
    o << "<text x=\"" << coord(lx) << "\" y=\"" << coord(ly + 4) << "\">"
      << escape(fit(bar.label, width, kFontSize)) << "</text>\n";
    o << "<rect x=\"" << coord(lx) << "\" y=\"" << coord(ly + 10) << "\" width=\"" << coord(bw)
      << "\" height=\"10\" fill=\"url(#" << id << "-bar" << b << ")\"/>\n";
    o << "<text x=\"" << coord(lx) << "\" y=\"" << coord(ly + 33) << "\" font-size=\"10\" fill=\""
      << kTickColour << "\">" << escape(bar.low_label) << "</text>\n";
    o << "<text x=\"" << coord(lx + bw) << "\" y=\"" << coord(ly + 33)
      << "\" font-size=\"10\" text-anchor=\"end\" fill=\"" << kTickColour << "\">"
      << escape(bar.high_label) << "</text>\n";
  }
  o << "</g>\n";
}

// Room for the legend: the widest label after its line sample; colour bars need 120 px.
double legend_width(const ChartSpec& spec, const std::vector<Series>& series) {
  double text = 0;
  for (const Series& s : series) text = std::max(text, text_width(s.label, kFontSize));
  for (const LegendKey& k : spec.legend_keys) text = std::max(text, text_width(k.label, kFontSize));
  double width = text > 0 ? kSampleWidth + 6 + text : 0;
  for (const ColourBar& bar : spec.colour_bars)
    width = std::max({width, 120.0, text_width(bar.label, kFontSize)});
  return std::min(width, 0.3 * spec.width);
}

}  // namespace

std::string render_svg(const ChartSpec& spec, const std::vector<Series>& series) {
  check(spec.width >= 200 && spec.height >= 150 && spec.width <= 20000 && spec.height <= 20000,
        "render_svg: chart size ", spec.width, "x", spec.height,
        " is out of range (200x150 to 20000x20000)");
  std::vector<std::vector<Point>> points;
  for (const Series& s : series) points.push_back(plottable(s, spec.log_y));
  Frame f;
  f.log_y = spec.log_y;
  set_ranges(f, points, spec.height);

  // The plot box: tick labels on the left, the legend on the right, titles above and below.
  const double legend_w = legend_width(spec, series);
  double tick_w = 0;
  for (double t : f.y_ticks) tick_w = std::max(tick_w, f.y_label_width(t));
  f.left = 22 + (spec.y_label.empty() ? 0 : kFontSize) + tick_w;
  f.right = spec.width - 20 - (legend_w > 0 ? legend_w + 16 : 0);
  f.top = spec.title.empty() ? 20 : 48;
  f.bottom = spec.height - (spec.x_label.empty() ? 34 : 52);
  check(f.right - f.left > 40 && f.bottom - f.top > 40, "render_svg: no room for the plot in ",
        spec.width, "x", spec.height, " (labels too long?)");
  f.x_ticks =
      linear_ticks(f.x_min, f.x_max, std::max(2, static_cast<int>((f.right - f.left) / 110)));
  f.x_step = f.x_ticks.size() > 1 ? f.x_ticks[1] - f.x_ticks[0] : 1;

  const std::string id = chart_id(spec, series);
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << spec.width << "\" height=\""
    << spec.height << "\" viewBox=\"0 0 " << spec.width << " " << spec.height
    << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"" << kFontSize
    << "\">\n";
  if (!spec.title.empty()) o << "<title>" << escape(spec.title) << "</title>\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<defs>\n";
  // The clip reaches a few pixels past the axes so lines along the edges and end markers show.
  o << "<clipPath id=\"" << id << "-plot\"><rect x=\"" << coord(f.left - 4) << "\" y=\""
    << coord(f.top - 4) << "\" width=\"" << coord(f.right - f.left + 8) << "\" height=\""
    << coord(f.bottom - f.top + 8) << "\"/></clipPath>\n";
  for (size_t b = 0; b < spec.colour_bars.size(); ++b) {
    const auto& colours = spec.colour_bars[b].colours;
    o << "<linearGradient id=\"" << id << "-bar" << b << "\">";
    for (size_t i = 0; i < colours.size(); ++i)
      o << "<stop offset=\""
        << coord_fine(colours.size() > 1 ? double(i) / (colours.size() - 1) : 0)
        << "\" stop-color=\"" << escape(colours[i]) << "\"/>";
    o << "</linearGradient>\n";
  }
  o << "</defs>\n";
  write_axes(o, f);
  write_titles(o, f, spec);
  write_lines(o, f, series, points, id);
  if (legend_w > 0) write_legend(o, f, spec, series, legend_w, id);
  o << "</svg>\n";
  return o.str();
}

}  // namespace vg::tools
