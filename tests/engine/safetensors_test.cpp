// The safetensors reader and writer: the layout byte by byte, a round trip to the bit, the
// half-precision types, and one clear vg::Error for each way a file can be wrong (the bad
// files are built here by hand).
#include <doctest/doctest.h>

#include <cstring>
#include <limits>

#include "engine/io/safetensors.h"

using vg::SafeTensors;
using vg::Tensor;

namespace {

// A file from a header written out as text and raw data bytes.
std::string file_of(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string floats(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), 4);
  return out;
}

// The vg::Error that parsing `bytes` throws (empty when it throws none).
std::string error_of(const std::string& bytes) {
  try {
    vg::parse_safetensors(bytes, "m.safetensors");
  } catch (const vg::Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("safetensors: the standard layout, read back to the bit") {
  SafeTensors file;
  file.tensors["b"] = vg::from_vector(std::vector<float>{1.5f, -0.0f, 1e-40f}, {3});
  file.tensors["a"] = vg::from_vector(std::vector<double>{0.1, 2}, {1, 2});
  file.metadata["format"] = "pt";
  const std::string bytes = vg::safetensors_to_bytes(file);

  uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes.data(), 8);
  CHECK(header_bytes % 8 == 0);  // the data starts aligned
  CHECK(bytes.size() == 8 + header_bytes + 2 * 8 + 3 * 4);
  const std::string header = bytes.substr(8, header_bytes);
  CHECK(contains(header, R"("__metadata__":{"format":"pt"})"));
  CHECK(contains(header, R"("a":{"data_offsets":[0,16],"dtype":"F64","shape":[1,2]})"));
  CHECK(contains(header, R"("b":{"data_offsets":[16,28],"dtype":"F32","shape":[3]})"));
  CHECK(bytes.substr(8 + header_bytes + 16) == floats({1.5f, -0.0f, 1e-40f}));

  const SafeTensors back = vg::parse_safetensors(bytes, "m.safetensors");
  CHECK(back.metadata == file.metadata);
  REQUIRE(back.tensors.size() == 2);
  const Tensor b = back.tensors.at("b");
  CHECK(b.shape() == vg::Shape{3});
  CHECK(std::memcmp(b.data<float>(), file.tensors["b"].data<float>(), 12) == 0);
  CHECK(back.tensors.at("a").dtype() == vg::DType::f64);
  CHECK(back.tensors.at("a").to_vector() == std::vector<double>{0.1, 2});
}

TEST_CASE("safetensors: F16 and BF16 become float32 exactly; empty tensors and files") {
  // F16 1.0, -2.0, the smallest subnormal 2^-24, 65504; BF16 1.0 and -3.0.
  const uint16_t half[] = {0x3c00, 0xc000, 0x0001, 0x7bff}, bf16[] = {0x3f80, 0xc040};
  std::string data(reinterpret_cast<const char*>(half), 8);
  data.append(reinterpret_cast<const char*>(bf16), 4);
  const SafeTensors f = vg::parse_safetensors(
      file_of(R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},)"
              R"("z":{"dtype":"F32","shape":[0,3],"data_offsets":[8,8]},)"
              R"("g":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}})",
              data),
      "m.safetensors");
  CHECK(f.tensors.at("h").to_vector() == std::vector<double>{1.0, -2.0, 0x1p-24, 65504.0});
  CHECK(f.tensors.at("g").to_vector() == std::vector<double>{1.0, -3.0});
  CHECK(f.tensors.at("z").shape() == vg::Shape{0, 3});
  CHECK(vg::parse_safetensors(file_of("{}", ""), "m").tensors.empty());
}

TEST_CASE("safetensors: every malformed file is one vg::Error naming the file and the entry") {
  const std::string one = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  REQUIRE(error_of(file_of(one, floats({1, 2}))).empty());

  // Truncated: no room for the length, or a length past the end of the file.
  CHECK(error_of("abc") ==
        "m.safetensors: 3 bytes is too short for a safetensors file (the header length alone is 8)");
  CHECK(error_of(file_of(one, floats({1, 2})).substr(0, 30)) ==
        "m.safetensors: the header needs 54 bytes, the file has 22 after the length (truncated?)");
  std::string huge(8, '\xff');
  CHECK(contains(error_of(huge + "{}"), "header length 18446744073709551615 is larger"));
  CHECK(contains(error_of(file_of("{\"w\":", "")), "m.safetensors: header is not JSON: "));
  CHECK(error_of(file_of("[1,2]", "")) == "m.safetensors: header is not a JSON object");

  // Offsets past the data, of the wrong size, overlapping, or leaving bytes unclaimed.
  CHECK(error_of(file_of(one, floats({1}))) ==
        "m.safetensors: tensor 'w': data_offsets [0,8] lie outside the 4 bytes of data");
  CHECK(error_of(file_of(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                         floats({1, 2}))) ==
        "m.safetensors: tensor 'w': data_offsets [0,8] hold 8 bytes, shape [3] F32 needs 12");
  CHECK(error_of(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         floats({1, 2, 3}))) ==
        "m.safetensors: tensors 'a' and 'b' overlap (bytes [0,8) and [4,12))");
  CHECK(error_of(file_of(one, floats({1, 2, 3}))) ==
        "m.safetensors: no tensor holds data bytes [8,12)");
  CHECK(error_of(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         floats({1, 2}))) == "m.safetensors: no tensor holds data bytes [0,4)");
  CHECK(error_of(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})",
                         floats({1, 2}))) ==
        "m.safetensors: tensor 'w': data_offsets [8,4] lie outside the 8 bytes of data");

  // Dtypes: unknown names, and types the format knows that vitgrad does not read.
  CHECK(error_of(file_of(R"({"w":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})",
                         floats({1}))) == "m.safetensors: tensor 'w': unknown dtype 'F33'");
  CHECK(error_of(file_of(R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                         floats({1, 2}))) ==
        "m.safetensors: tensor 'w': dtype I64 is not a floating type vitgrad reads (F32, F64, "
        "F16, BF16)");

  // Entries of the wrong form.
  CHECK(error_of(file_of(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                         floats({1}))) ==
        "m.safetensors: tensor 'w': 'shape' [-1] must hold integers >= 0");
  CHECK(error_of(file_of(R"({"w":{"dtype":"F32","shape":[1]}})", floats({1}))) ==
        "m.safetensors: tensor 'w': 'data_offsets' is missing");
  CHECK(error_of(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})",
                         floats({1}))) == "m.safetensors: tensor 'w': unexpected key 'x'");
  CHECK(error_of(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})",
                         floats({1}))) ==
        "m.safetensors: tensor 'w': 'data_offsets' must be two integers >= 0, got [0]");
  CHECK(error_of(file_of(R"({"__metadata__":{"step":3}})", "")) ==
        "m.safetensors: __metadata__ entry 'step' is not a string");
}

TEST_CASE("safetensors: a file that cannot be read names itself") {
  CHECK_THROWS_WITH_AS(vg::load_safetensors("/nonexistent/m.safetensors"),
                       doctest::Contains("/nonexistent/m.safetensors: cannot open"), vg::Error);
  CHECK(vg::is_safetensors_path("run/model.safetensors"));
  CHECK_FALSE(vg::is_safetensors_path("run/last.json"));
}
