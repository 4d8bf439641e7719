#include "engine/io/json_tensor.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "engine/io/base64.h"

namespace vg {

// A large tensor's bytes are written and read as they lie in memory.
static_assert(std::endian::native == std::endian::little, "checkpoints store little-endian bytes");

namespace {

using nlohmann::json;

// "model 'x'" for messages; falls back to the tensor's name, then to "tensor".
std::string label(const std::string& what, const Tensor& t) {
  if (!what.empty()) return what;
  if (!t.name().empty()) return "tensor '" + t.name() + "'";
  return "tensor";
}

std::string hex64(uint64_t x) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

uint64_t parse_hex64(const json& j, const std::string& what, const std::string& field) {
  check(j.is_string(), what, ": ", field, " must be a 16-digit hex string, got ", j.dump());
  const std::string& s = j.get_ref<const std::string&>();
  check(s.size() == 16, what, ": ", field, " must have 16 hex digits, got \"", s, "\"");
  uint64_t x = 0;
  for (char c : s) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    check(digit >= 0, what, ": ", field, " is not hex: \"", s, "\"");
    x = (x << 4) | static_cast<uint64_t>(digit);
  }
  return x;
}

void check_keys(const json& j, const std::string& what, std::initializer_list<const char*> keys) {
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : keys) known = known || key == k;
    check(known, what, ": unknown key '", key, "'");
  }
  for (const char* k : keys) check(j.contains(k), what, ": missing key '", k, "'");
}

}  // namespace

json tensor_to_json(const Tensor& t, const std::string& what) {
  check(t.defined(), "tensor_to_json: ", label(what, t), " is undefined");
  const bool inline_values = t.numel() <= kInlineValues;
  json data = json::array();
  auto& values = data.get_ref<json::array_t&>();
  if (inline_values) values.reserve(static_cast<size_t>(t.numel()));
  dispatch(t.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      // (no check() here: its message would be built for every element)
      if (!std::isfinite(p[i]))
        throw Error(cat_str("tensor_to_json: ", label(what, t), " holds ", p[i], " at flat index ",
                            i, " (shape ", shape_str(t.shape()),
                            "); only finite values can be saved"));
      // float -> double is exact, and nlohmann prints the shortest text that reads back to
      // the same double, so the float comes back bit for bit.
      if (inline_values) values.emplace_back(static_cast<double>(p[i]));
    }
  });
  json j{{"shape", t.shape()}, {"dtype", dtype_name(t.dtype())}};
  if (inline_values) {
    j["data"] = std::move(data);
  } else {
    std::string text;
    append_base64(text, static_cast<const uint8_t*>(t.raw_data()),
                  static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
    j["base64"] = std::move(text);
  }
  return j;
}

namespace {

// The values of "data": numbers, each one checked.
void read_numbers(const json& data, Tensor& t, const std::string& what) {
  check(data.is_array(), what, ": data must be an array, got ", data.type_name());
  check(static_cast<int64_t>(data.size()) == t.numel(), what, ": data has ", data.size(),
        " values, shape ", t.shape(), " needs ", t.numel());
  dispatch(t.dtype(), [&](auto z) {
    using T = decltype(z);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const json& v = data[static_cast<size_t>(i)];
      if (!v.is_number()) throw Error(cat_str(what, ": data[", i, "] is not a number: ", v.dump()));
      p[i] = static_cast<T>(v.get<double>());
      if (!std::isfinite(p[i]))
        throw Error(cat_str(what, ": data[", i, "] = ", v.dump(), " is not a finite ",
                            dtype_name(t.dtype())));
    }
  });
}

// The bytes of "base64": a binary value (json_reader.h decodes the text while reading) or the
// text itself (a document parsed some other way), decoded into `decoded`.
const std::vector<uint8_t>& encoded_bytes(const json& e, std::vector<uint8_t>& decoded,
                                          const std::string& what) {
  if (e.is_binary()) return e.get_binary();
  check(e.is_string(), what, ": base64 must be a string, got ", e.type_name());
  const std::string& text = e.get_ref<const std::string&>();
  Base64Decoder decoder(decoded, what);
  decoder.feed(text.data(), text.size());
  decoder.finish();
  return decoded;
}

// Little-endian bytes as the tensor's values, each one checked.
void read_bytes(const std::vector<uint8_t>& bytes, Tensor& t, const std::string& what) {
  std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  dispatch(t.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!std::isfinite(p[i]))
        throw Error(
            cat_str(what, ": value ", i, " is ", p[i], ", not a finite ", dtype_name(t.dtype())));
  });
}

}  // namespace

Tensor tensor_from_json(const json& j, const std::string& what) {
  check(j.is_object(), what, ": expected an object with shape, dtype and data (or base64), got ",
        j.type_name());
  const bool encoded = j.contains("base64");
  if (encoded)
    check_keys(j, what, {"shape", "dtype", "base64"});
  else
    check_keys(j, what, {"shape", "dtype", "data"});

  const json& js = j["shape"];
  check(js.is_array(), what, ": shape must be an array, got ", js.dump());
  Shape shape;
  int64_t numel = 1;
  for (const json& d : js) {
    check(d.is_number_integer() && d.get<int64_t>() >= 0, what,
          ": shape must hold non-negative integers, got ", js.dump());
    const int64_t n = d.get<int64_t>();
    check(n == 0 || numel <= std::numeric_limits<int64_t>::max() / 8 / n, what, ": shape ",
          js.dump(), " is too large");
    numel *= n;
    shape.push_back(n);
  }

  const json& jd = j["dtype"];
  check(jd.is_string() && (jd == "float32" || jd == "float64"), what,
        ": dtype must be \"float32\" or \"float64\", got ", jd.dump());
  const DType dtype = dtype_from_name(jd.get<std::string>());
  // The values must all be there before a tensor of the claimed size is made.
  if (!encoded) {
    check(!j["data"].is_array() || static_cast<int64_t>(j["data"].size()) == numel, what,
          ": data has ", j["data"].size(), " values, shape ", shape, " needs ", numel);
    Tensor t = Tensor::empty(shape, dtype);
    read_numbers(j["data"], t, what);
    return t;
  }
  std::vector<uint8_t> decoded;
  const std::vector<uint8_t>& bytes = encoded_bytes(j["base64"], decoded, what);
  const auto want = static_cast<size_t>(numel) * dtype_size(dtype);
  check(bytes.size() == want, what, ": base64 holds ", bytes.size(), " bytes, shape ", shape,
        " of ", dtype_name(dtype), " needs ", want);
  Tensor t = Tensor::empty(shape, dtype);
  read_bytes(bytes, t, what);
  return t;
}

json rng_to_json(const RngState& state) {
  json words = json::array();
  for (uint64_t w : state.s) words.push_back(hex64(w));
  return json{{"s", std::move(words)},
              {"has_spare_normal", state.has_spare_normal},
              {"spare_normal", hex64(std::bit_cast<uint64_t>(state.spare_normal))}};
}

RngState rng_from_json(const json& j, const std::string& what) {
  check(j.is_object(), what,
        ": expected an object with s, has_spare_normal and spare_normal, "
        "got ",
        j.type_name());
  check_keys(j, what, {"s", "has_spare_normal", "spare_normal"});
  const json& words = j["s"];
  check(words.is_array() && words.size() == 4, what, ": s must be an array of 4 hex strings, got ",
        words.dump());
  RngState state;
  bool all_zero = true;
  for (size_t i = 0; i < 4; ++i) {
    state.s[i] = parse_hex64(words[i], what, "s[" + std::to_string(i) + "]");
    all_zero = all_zero && state.s[i] == 0;
  }
  check(!all_zero, what, ": s is all zero, a state xoshiro256** never leaves");
  check(j["has_spare_normal"].is_boolean(), what, ": has_spare_normal must be true or false, got ",
        j["has_spare_normal"].dump());
  state.has_spare_normal = j["has_spare_normal"].get<bool>();
  state.spare_normal = std::bit_cast<double>(parse_hex64(j["spare_normal"], what, "spare_normal"));
  check(std::isfinite(state.spare_normal), what, ": spare_normal is not a finite double");
  return state;
}

std::string json_reason(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const size_t tag_end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos
             ? what.substr(tag_end + 2)
             : what;
}

}  // namespace vg
