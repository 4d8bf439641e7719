// The streaming reader and writer behind checkpoints: the same document as nlohmann's parser
// for plain JSON, large tensors as base64 decoded on the fly, and one clear error for every
// kind of damage.
#include "engine/io/json_reader.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/core/rng.h"
#include "engine/io/base64.h"
#include "engine/io/checkpoint.h"
#include "engine/io/json_tensor.h"
#include "engine/io/json_writer.h"
#include "tests/scratch_dir.h"

using namespace vg;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path temp_file(const std::string& name) {
  return vg::testing::scratch_dir("json_reader") / name;
}

std::string base64_of(const std::string& bytes) {
  std::string out;
  append_base64(out, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return out;
}

}  // namespace

TEST_CASE("base64 follows RFC 4648's test vectors both ways") {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},        {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, text] : vectors) {
    CHECK(base64_of(plain) == text);
    // Decoded in pieces of every size, as a reader's buffer would cut it.
    for (size_t piece = 1; piece <= 5; ++piece) {
      std::vector<uint8_t> bytes;
      Base64Decoder decoder(bytes, "t");
      const std::string t = text;
      for (size_t i = 0; i < t.size(); i += piece)
        decoder.feed(t.data() + i, std::min(piece, t.size() - i));
      decoder.finish();
      CHECK(std::string(bytes.begin(), bytes.end()) == plain);
    }
  }
}

TEST_CASE("the reader builds the same document as nlohmann's parser") {
  const std::string text = R"( {"a": [1, -2, 0, 18446744073709551615, 9223372036854775807,
      -9223372036854775808, 1.5, -0.0, 1e-400, 2.5E+3, 1e2],
      "s": "tab\t quote\" slash\/ \u00e9 \ud83d\ude00 \u0000 end", "t": true, "f": false,
      "n": null, "o": {}, "e": [], "nested": {"deep": [[{"x": "y"}]]}} )";
  const json mine = read_json_text(text, "doc.json");
  CHECK(mine == json::parse(text));
  CHECK(mine["a"][3].is_number_unsigned());
  CHECK(mine["a"][6].is_number_float());
  CHECK(std::signbit(mine["a"][7].get<double>()));
}

TEST_CASE("a base64 value is read as its bytes, from text and from a file of many buffers") {
  Rng rng(3);
  const Tensor big = randn({600, 700}, rng);  // 1.68 MB: more than one read buffer
  const json j = {{"w", tensor_to_json(big, "w")}, {"b", tensor_to_json(randn({5}, rng), "b")}};
  CHECK(j["w"]["base64"].is_string());  // plain JSON wherever it goes
  CHECK(j["b"]["data"].size() == 5);    // a small tensor stays numbers
  std::string text;
  append_json(text, j);
  CHECK(text.find("\"dtype\":\"float32\",\"shape\":[600,700],\"base64\":\"") !=
        std::string::npos);  // the bytes after what describes them
  CHECK(json::parse(text) == j);  // any JSON parser reads it
  const fs::path path = temp_file("w.json");
  std::ofstream(path, std::ios::binary) << text;
  for (const json& back : {read_json_text(text, "w.json"), read_json_file(path.string())}) {
    REQUIRE(back["w"]["base64"].is_binary());
    const Tensor w = tensor_from_json(back["w"], "w");
    CHECK(std::memcmp(w.raw_data(), big.raw_data(), big.numel() * 4) == 0);
    std::string again;
    append_json(again, back);  // binary values are written as the same text
    CHECK(again == text);
  }
}

TEST_CASE("damaged JSON and damaged base64 are one error naming the source and the place") {
  auto fails_with = [](const std::string& text, const std::string& message) {
    INFO("text: ", text.substr(0, 80), "; expected: ", message);
    CHECK_THROWS_WITH_AS(read_json_text(text, "ck.json"), doctest::Contains(message.c_str()),
                         Error);
  };
  fails_with("", "ck.json: not a valid JSON document (truncated or damaged?) at byte 1");
  fails_with("{\"a\": [1, 2}", "at byte 12");
  fails_with("{\"a\": 1} x", "at byte 10");
  fails_with("{\"a\": 01}", "at byte 7");
  fails_with("{\"a\": \"x\ny\"}", "at byte 9");
  fails_with("{\"a\": tru}", "not a valid JSON document");
  fails_with("{\"a\": \"\\ud800\"}", "not a valid JSON document");
  fails_with("{\"a\": \"\xff\"}", "ck.json: a string in 'a' is not valid UTF-8");
  fails_with("[1e999]", "ck.json: not a valid JSON document (number overflow parsing '1e999')");
  fails_with("{\"a\": {\"b\": 1, \"b\": 2}}", "ck.json: key 'b' appears twice in 'a'");
  fails_with("{\"a\": 1, \"a\": 2}", "key 'a' appears twice at the top level");
  fails_with(std::string(300, '[') + std::string(300, ']'), "nesting deeper than 256 levels");
  fails_with("{\"m\": {\"base64\": \"Zm9v!mFy\"}}",
             "ck.json: 'm' / 'base64': character 4 of the base64 text is not base64");
  fails_with("{\"m\": {\"base64\": \"Zm9vYmF\"}}", "has 7 characters, not a multiple of 4");
  fails_with("{\"m\": {\"base64\": \"Zg==Zm9v\"}}", "padding '=' before the end");
  fails_with("{\"m\": {\"base64\": \"Zm9\\/\"}}", "holds an escape");
  fails_with("{\"m\": {\"base64\": \"Zm9v", "at byte 23");
  CHECK_THROWS_WITH_AS(read_json_file("/nonexistent/ck.json"),
                       doctest::Contains("/nonexistent/ck.json: cannot open"), Error);
}

TEST_CASE("a tensor's base64 must hold exactly its values, all finite") {
  json j = {{"shape", {2}}, {"dtype", "float32"}, {"base64", base64_of(std::string(12, 'a'))}};
  CHECK_THROWS_WITH_AS(tensor_from_json(j, "model entry 'x'"),
                       doctest::Contains("model entry 'x': base64 holds 12 bytes, shape [2] of "
                                         "float32 needs 8"),
                       Error);
  const float inf = std::numeric_limits<float>::infinity();
  const float values[2] = {1.0f, inf};
  j["base64"] = base64_of(std::string(reinterpret_cast<const char*>(values), 8));
  CHECK_THROWS_WITH_AS(tensor_from_json(j, "model entry 'x'"),
                       doctest::Contains("value 1 is inf, not a finite float32"), Error);
  j["shape"] = {1000000000000};  // a claim far beyond the bytes: refused before allocating
  CHECK_THROWS_WITH_AS(tensor_from_json(j, "x"), doctest::Contains("needs 4000000000000"), Error);
  j = {{"shape", {2}}, {"dtype", "float32"}, {"base64", 12}};
  CHECK_THROWS_WITH_AS(tensor_from_json(j, "x"), doctest::Contains("base64 must be a string"),
                       Error);
}

TEST_CASE("a version-1 checkpoint (every value a number) still loads, and saves as version 2") {
  const std::string v1 = std::string(VG_FIXTURES_DIR) + "/checkpoint_v1.json";
  const Checkpoint old = load_checkpoint(v1);
  CHECK(old.step == 2);
  CHECK(old.model.size() == 20);
  const fs::path path = temp_file("v2.json");
  save_checkpoint(path.string(), old);
  const std::string text = [&] {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  CHECK(text.rfind("{\"format\":\"vitgrad-checkpoint\",\"version\":2,\"step\":2,", 0) == 0);
  CHECK(fs::file_size(path) < fs::file_size(v1));
  const Checkpoint back = load_checkpoint(path.string());
  for (const auto& [name, t] : old.model) {
    INFO(name);
    REQUIRE(back.model.count(name) == 1);
    CHECK(std::memcmp(back.model.at(name).raw_data(), t.raw_data(), t.numel() * 4) == 0);
  }
  // The optimiser's and the EMA's tensors, value for value, whatever their form.
  const auto tensors_equal = [](const json& a, const json& b, const std::string& what) {
    const Tensor x = tensor_from_json(a, what), y = tensor_from_json(b, what);
    return x.shape() == y.shape() && std::memcmp(x.raw_data(), y.raw_data(), x.numel() * 4) == 0;
  };
  for (const auto& [name, state] : old.optimizer["state"].items())
    for (const char* buffer : {"exp_avg", "exp_avg_sq"})
      CHECK(tensors_equal(state[buffer], back.optimizer["state"][name][buffer], name));
  for (const auto& [name, value] : old.extra["ema"].items())
    CHECK(tensors_equal(value, back.extra["ema"][name], name));
  json a = old.extra, b = back.extra;
  a.erase("ema");
  b.erase("ema");
  CHECK(a == b);
  CHECK(old.config == back.config);
  CHECK(old.scheduler == back.scheduler);
  CHECK(old.rng == back.rng);
  CHECK(old.data == back.data);
}
