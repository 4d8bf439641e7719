#include "engine/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "engine/io/checkpoint.h"
#include "engine/io/json_tensor.h"

namespace vg {
namespace {

using nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this build copies bytes as they are");

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

// The dtypes vitgrad reads and the size of one element; every other name the format knows.
struct DTypeInfo {
  const char* name;
  size_t bytes;
};
constexpr DTypeInfo kReadable[] = {{"F32", 4}, {"F64", 8}, {"F16", 2}, {"BF16", 2}};
constexpr const char* kOtherKnown[] = {"BOOL", "U8",  "I8",  "U16",     "I16",    "U32",
                                       "I32",  "U64", "I64", "F8_E4M3", "F8_E5M2"};

// IEEE half to float: exact (every half is a float).
float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // Inf or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // +-0
  } else {        // subnormal half: a normal float
    int shift = 0;
    uint32_t m = mantissa;
    while (!(m & 0x400)) m <<= 1, ++shift;
    bits = sign | (uint32_t(113 - shift) << 23) | ((m & 0x3ff) << 13);
  }
  return std::bit_cast<float>(bits);
}

// One header entry, checked: its dtype's size, shape and byte range.
struct Entry {
  std::string name, dtype;
  size_t element_bytes = 0;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

Entry read_entry(const std::string& name, const json& j, uint64_t data_bytes,
                 const std::string& where) {
  check(j.is_object(), where, "is not an object");
  for (const auto& [key, value] : j.items())
    check(key == "dtype" || key == "shape" || key == "data_offsets", where, "unexpected key '", key,
          "'");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    check(j.contains(key), where, "'", key, "' is missing");
  Entry e;
  e.name = name;
  check(j["dtype"].is_string(), where, "'dtype' is not a string");
  e.dtype = j["dtype"].get<std::string>();
  for (const DTypeInfo& d : kReadable)
    if (e.dtype == d.name) e.element_bytes = d.bytes;
  if (!e.element_bytes) {
    for (const char* other : kOtherKnown)
      check(e.dtype != other, where, "dtype ", e.dtype,
            " is not a floating type vitgrad reads (F32, F64, F16, BF16)");
    throw Error(cat_str(where, "unknown dtype '", e.dtype, "'"));
  }
  const json& shape = j["shape"];
  check(shape.is_array(), where, "'shape' is not an array");
  uint64_t numel = 1;
  for (const json& d : shape) {
    check(d.is_number_unsigned() && d.get<uint64_t>() < (uint64_t(1) << 40), where, "'shape' ",
          shape.dump(), " must hold integers >= 0");
    e.shape.push_back(d.get<int64_t>());
    numel *= d.get<uint64_t>();
    check(numel < (uint64_t(1) << 40), where, "shape ", shape.dump(), " is too large");
  }
  const json& offsets = j["data_offsets"];
  check(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
            offsets[1].is_number_unsigned(),
        where, "'data_offsets' must be two integers >= 0, got ", offsets.dump());
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  check(e.begin <= e.end && e.end <= data_bytes, where, "data_offsets [", e.begin, ",", e.end,
        "] lie outside the ", data_bytes, " bytes of data");
  check(e.end - e.begin == numel * e.element_bytes, where, "data_offsets [", e.begin, ",", e.end,
        "] hold ", e.end - e.begin, " bytes, shape ", e.shape, " ", e.dtype, " needs ",
        numel * e.element_bytes);
  return e;
}

// The entries, sorted by offset, must tile [0, data_bytes): the format has no gaps.
void check_tiling(std::vector<Entry>& entries, uint64_t data_bytes, const std::string& source) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    check(e.begin >= at, source, ": tensors '", previous ? previous->name : "", "' and '", e.name,
          "' overlap (bytes [", previous ? previous->begin : 0, ",", at, ") and [", e.begin, ",",
          e.end, "))");
    check(e.begin == at, source, ": no tensor holds data bytes [", at, ",", e.begin, ")");
    at = e.end;
    previous = &e;
  }
  check(at == data_bytes, source, ": no tensor holds data bytes [", at, ",", data_bytes, ")");
}

Tensor read_tensor(const Entry& e, const char* data) {
  const char* bytes = data + e.begin;
  const int64_t n = shape_numel(e.shape);
  if (e.dtype == "F64") {
    Tensor t = Tensor::empty(e.shape, DType::f64);
    if (n) std::memcpy(t.raw_data(), bytes, size_t(n) * 8);
    return t;
  }
  Tensor t = Tensor::empty(e.shape, DType::f32);
  float* out = t.data<float>();
  if (e.dtype == "F32") {
    if (n) std::memcpy(out, bytes, size_t(n) * 4);
    return t;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    out[i] = e.dtype == "BF16" ? std::bit_cast<float>(uint32_t(h) << 16) : half_to_float(h);
  }
  return t;
}

}  // namespace

std::string safetensors_to_bytes(const SafeTensors& file) {
  json header = json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  uint64_t at = 0;
  for (const auto& [name, t] : file.tensors) {
    check(name != "__metadata__", "safetensors: a tensor cannot be named '__metadata__'");
    const uint64_t bytes = uint64_t(t.numel()) * dtype_size(t.dtype());
    header[name] = {{"dtype", t.dtype() == DType::f32 ? "F32" : "F64"},
                    {"shape", t.shape()},
                    {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string out(8, '\0');
  const uint64_t length = text.size();
  std::memcpy(out.data(), &length, 8);
  out += text;
  for (const auto& [name, t] : file.tensors) {
    out.append(static_cast<const char*>(t.raw_data()), size_t(t.numel()) * dtype_size(t.dtype()));
  }
  return out;
}

SafeTensors parse_safetensors(const std::string& bytes, const std::string& source) {
  check(bytes.size() >= 8, source, ": ", bytes.size(),
        " bytes is too short for a safetensors file (the header length alone is 8)");
  uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes.data(), 8);
  check(header_bytes <= kMaxHeaderBytes, source, ": header length ", header_bytes,
        " is larger than the format allows (", kMaxHeaderBytes, ")");
  check(header_bytes <= bytes.size() - 8, source, ": the header needs ", header_bytes,
        " bytes, the file has ", bytes.size() - 8, " after the length (truncated?)");
  json header;
  try {
    header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + int64_t(header_bytes));
  } catch (const json::exception& e) {
    throw Error(cat_str(source, ": header is not JSON: ", json_reason(e)));
  }
  check(header.is_object(), source, ": header is not a JSON object");
  const uint64_t data_bytes = bytes.size() - 8 - header_bytes;
  const char* data = bytes.data() + 8 + header_bytes;

  SafeTensors file;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      check(value.is_object(), source, ": '__metadata__' is not an object");
      for (const auto& [key, text] : value.items()) {
        check(text.is_string(), source, ": __metadata__ entry '", key, "' is not a string");
        file.metadata[key] = text.get<std::string>();
      }
      continue;
    }
    entries.push_back(read_entry(name, value, data_bytes, source + ": tensor '" + name + "': "));
  }
  check_tiling(entries, data_bytes, source);
  for (const Entry& e : entries) file.tensors[e.name] = read_tensor(e, data);
  return file;
}

SafeTensors load_safetensors(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(cat_str(path, ": is a folder, expected a .safetensors file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat_str(path, ": cannot open (", std::strerror(errno), ")"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return parse_safetensors(bytes.str(), path);
}

void save_safetensors(const std::string& path, const SafeTensors& file) {
  write_file_atomically(path, safetensors_to_bytes(file));
}

bool is_safetensors_path(const std::string& path) {
  const std::string ext = ".safetensors";
  return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

}  // namespace vg
