#include "engine/data/rand_augment.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "engine/core/error.h"

namespace vg::data {
namespace {

constexpr double kLevelDenom = 10;  // timm's _LEVEL_DENOM: magnitudes run 0..10

bool signed_op(RandOp op) {
  return op == RandOp::kRotate || op == RandOp::kShearX || op == RandOp::kShearY ||
         op == RandOp::kTranslateXRel || op == RandOp::kTranslateYRel;
}

uint8_t clip8(double v) { return static_cast<uint8_t>(std::clamp(v, 0.0, 255.0)); }

// Every pixel through a table of 256 grey levels.
void apply_lut(std::vector<uint8_t>& image, const std::array<uint8_t, 256>& lut) {
  for (uint8_t& p : image) p = lut[p];
}

// PIL's Image.blend(degenerate, image, factor): degenerate + factor (image - degenerate),
// truncated and clipped to 0..255.
void blend(std::vector<uint8_t>& image, const std::vector<uint8_t>& degenerate, double factor) {
  for (size_t i = 0; i < image.size(); ++i)
    image[i] = clip8(std::trunc(degenerate[i] + factor * (double(image[i]) - degenerate[i])));
}

void auto_contrast(std::vector<uint8_t>& image) {
  const auto [lo, hi] = std::minmax_element(image.begin(), image.end());
  if (*hi <= *lo) return;
  const double scale = 255.0 / (*hi - *lo), offset = -*lo * scale;
  std::array<uint8_t, 256> lut;
  for (int i = 0; i < 256; ++i) lut[i] = clip8(std::trunc(i * scale + offset));
  apply_lut(image, lut);
}

// PIL's ImageOps.equalize: a step of (pixels - count of the last level) / 255 grey levels.
void equalize(std::vector<uint8_t>& image) {
  std::array<int64_t, 256> histogram{};
  for (uint8_t p : image) ++histogram[p];
  int64_t last = 0, total = 0;
  for (int64_t h : histogram)
    if (h) last = h, total += h;
  const int64_t step = (total - last) / 255;
  if (step == 0) return;
  std::array<uint8_t, 256> lut;
  int64_t n = step / 2;
  for (int i = 0; i < 256; ++i) {
    lut[i] = static_cast<uint8_t>(std::min<int64_t>(255, n / step));
    n += histogram[i];
  }
  apply_lut(image, lut);
}

// PIL's SMOOTH filter (3x3, centre weight 5, sum 13), border pixels kept.
std::vector<uint8_t> smooth(const std::vector<uint8_t>& image, int64_t height, int64_t width) {
  std::vector<uint8_t> out = image;
  for (int64_t y = 1; y + 1 < height; ++y)
    for (int64_t x = 1; x + 1 < width; ++x) {
      int sum = 4 * image[y * width + x];
      for (int64_t dy = -1; dy <= 1; ++dy)
        for (int64_t dx = -1; dx <= 1; ++dx) sum += image[(y + dy) * width + x + dx];
      out[y * width + x] = clip8(std::floor(sum / 13.0 + 0.5));
    }
  return out;
}

// out(x, y) = in(a x + b y + c, d x + e y + f) at pixel centres, as PIL's AFFINE transform,
// sampled bilinearly; neighbours outside the image count as `fill`.
void affine(std::vector<uint8_t>& image, int64_t height, int64_t width,
            const std::array<double, 6>& m, uint8_t fill) {
  const std::vector<uint8_t> in = image;
  const auto at = [&](int64_t y, int64_t x) -> double {
    return (y < 0 || y >= height || x < 0 || x >= width) ? fill : in[y * width + x];
  };
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x) {
      const double sx = m[0] * (x + 0.5) + m[1] * (y + 0.5) + m[2] - 0.5;
      const double sy = m[3] * (x + 0.5) + m[4] * (y + 0.5) + m[5] - 0.5;
      const double fx = std::floor(sx), fy = std::floor(sy), tx = sx - fx, ty = sy - fy;
      const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
      const double top = at(y0, x0) * (1 - tx) + at(y0, x0 + 1) * tx;
      const double bottom = at(y0 + 1, x0) * (1 - tx) + at(y0 + 1, x0 + 1) * tx;
      image[y * width + x] = clip8(std::floor(top * (1 - ty) + bottom * ty + 0.5));
    }
}

// PIL's Image.rotate: counter-clockwise by `degrees` about the image centre.
std::array<double, 6> rotation(double degrees, int64_t height, int64_t width) {
  const double t = -degrees * M_PI / 180.0, cx = width / 2.0, cy = height / 2.0;
  const double a = std::cos(t), b = std::sin(t), d = -std::sin(t), e = std::cos(t);
  return {a, b, a * -cx + b * -cy + cx, d, e, d * -cx + e * -cy + cy};
}

}  // namespace

const char* rand_op_name(RandOp op) {
  static constexpr const char* kNames[kNumRandOps] = {
      "AutoContrast", "Equalize",   "Invert", "Posterize", "Solarize",      "SolarizeAdd",
      "Contrast",     "Brightness", "Sharpness", "Rotate", "ShearX",        "ShearY",
      "TranslateXRel", "TranslateYRel"};
  return kNames[static_cast<int>(op)];
}

RandAugmentConfig parse_rand_augment(const std::string& spec) {
  RandAugmentConfig c;
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dash; (dash = spec.find('-', start)) != std::string::npos; start = dash + 1)
    parts.push_back(spec.substr(start, dash - start));
  parts.push_back(spec.substr(start));
  check(parts[0] == "rand", "RandAugment '", spec,
        "': only timm's 'rand' policy is supported (e.g. rand-m7-mstd0.5), got '", parts[0], "'");
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const size_t digit = part.find_first_of("0123456789.");
    const std::string key = part.substr(0, digit);
    const std::string value = digit == std::string::npos ? "" : part.substr(digit);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    check(!value.empty() && *end == '\0' && std::isfinite(v), "RandAugment '", spec, "': part '",
          part, "' needs a number after its key");
    if (key == "m") c.magnitude = v;
    else if (key == "n") c.num_ops = static_cast<int64_t>(v);
    else if (key == "mstd") c.magnitude_std = v;
    else if (key == "mmax") c.magnitude_max = v;
    else if (key == "p") c.prob = v;
    else
      throw Error(cat_str("RandAugment '", spec, "': unknown or unsupported key '", key,
                          "' (known: m, n, mstd, mmax, p)"));
  }
  check(c.num_ops >= 0 && c.num_ops <= 16 && c.magnitude >= 0 && c.magnitude_std >= 0 &&
            c.magnitude_max > 0 && c.prob >= 0 && c.prob <= 1,
        "RandAugment '", spec, "': needs 0 <= n <= 16, m >= 0, mstd >= 0, mmax > 0, 0 <= p <= 1");
  return c;
}

double rand_op_arg(RandOp op, double m) {
  const double level = m / kLevelDenom;
  switch (op) {
    case RandOp::kRotate: return level * 30.0;
    case RandOp::kShearX: case RandOp::kShearY: return level * 0.3;
    case RandOp::kTranslateXRel: case RandOp::kTranslateYRel: return level * 0.45;
    case RandOp::kContrast: case RandOp::kBrightness: case RandOp::kSharpness:
      return level * 1.8 + 0.1;
    case RandOp::kPosterize: return std::trunc(level * 4);
    case RandOp::kSolarize: return std::trunc(level * 256);
    case RandOp::kSolarizeAdd: return std::trunc(level * 110);
    default: return 0;  // AutoContrast, Equalize, Invert take no argument
  }
}

std::vector<RandOpCall> draw_rand_augment(const RandAugmentConfig& config, Rng& rng) {
  std::vector<RandOp> chosen(config.num_ops);
  for (RandOp& op : chosen) op = static_cast<RandOp>(rng.below(kNumRandOps));
  std::vector<RandOpCall> calls;
  for (RandOp op : chosen) {
    if (config.prob < 1 && rng.uniform() > config.prob) continue;
    double m = config.magnitude;
    if (config.magnitude_std > 0) m = rng.normal(m, config.magnitude_std);
    m = std::clamp(m, 0.0, config.magnitude_max);
    double arg = rand_op_arg(op, m);
    if (signed_op(op) && rng.uniform() > 0.5) arg = -arg;
    calls.push_back({op, arg});
  }
  return calls;
}

void apply_rand_op(std::vector<uint8_t>& image, int64_t height, int64_t width,
                   const RandOpCall& call, uint8_t fill) {
  check(int64_t(image.size()) == height * width, "apply_rand_op(", rand_op_name(call.op),
        "): ", image.size(), " pixels for a ", height, "x", width, " image");
  std::array<uint8_t, 256> lut;
  const double arg = call.arg;
  switch (call.op) {
    case RandOp::kAutoContrast: return auto_contrast(image);
    case RandOp::kEqualize: return equalize(image);
    case RandOp::kInvert:
      for (uint8_t& p : image) p = static_cast<uint8_t>(255 - p);
      return;
    case RandOp::kPosterize: {
      if (arg >= 8) return;
      const auto mask = static_cast<uint8_t>(~((1 << (8 - int(arg))) - 1));
      for (uint8_t& p : image) p &= mask;
      return;
    }
    case RandOp::kSolarize:
      for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(i < arg ? i : 255 - i);
      return apply_lut(image, lut);
    case RandOp::kSolarizeAdd:
      for (int i = 0; i < 256; ++i) lut[i] = i < 128 ? clip8(i + arg) : static_cast<uint8_t>(i);
      return apply_lut(image, lut);
    case RandOp::kContrast: {
      double sum = 0;
      for (uint8_t p : image) sum += p;
      const auto mean = static_cast<uint8_t>(std::floor(sum / double(image.size()) + 0.5));
      return blend(image, std::vector<uint8_t>(image.size(), mean), arg);
    }
    case RandOp::kBrightness: return blend(image, std::vector<uint8_t>(image.size(), 0), arg);
    case RandOp::kSharpness: return blend(image, smooth(image, height, width), arg);
    case RandOp::kRotate: return affine(image, height, width, rotation(arg, height, width), fill);
    case RandOp::kShearX: return affine(image, height, width, {1, arg, 0, 0, 1, 0}, fill);
    case RandOp::kShearY: return affine(image, height, width, {1, 0, 0, arg, 1, 0}, fill);
    case RandOp::kTranslateXRel:
      return affine(image, height, width, {1, 0, arg * double(width), 0, 1, 0}, fill);
    case RandOp::kTranslateYRel:
      return affine(image, height, width, {1, 0, 0, 0, 1, arg * double(height)}, fill);
  }
}

}  // namespace vg::data
