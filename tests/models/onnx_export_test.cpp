// The ONNX export, read back with a minimal protobuf reader: the weights under timm's names
// with their exact bytes, opset 17, and a graph in which every node reads only values
// defined before it (the property onnx.checker and onnxruntime need first). That the graph
// computes vitgrad's logits is checked by tools/check_onnx.py with onnxruntime.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <set>
#include <string_view>

#include "models/onnx_export.h"
#include "tests/models/vit_helpers.h"

namespace {

struct Field {
  int number = 0;
  uint64_t value = 0;     // varint and fixed32 fields
  std::string_view bytes;  // length-delimited fields
};

uint64_t read_varint(std::string_view& in) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    REQUIRE_FALSE(in.empty());
    const auto b = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}

// The fields of one message, in order (wire types 0, 2 and 5, the ones ONNX files use here).
std::vector<Field> fields(std::string_view in) {
  std::vector<Field> out;
  while (!in.empty()) {
    const uint64_t key = read_varint(in);
    Field f{.number = int(key >> 3), .value = 0, .bytes = {}};
    switch (key & 7) {
      case 0: f.value = read_varint(in); break;
      case 2: {
        const uint64_t n = read_varint(in);
        REQUIRE(n <= in.size());
        f.bytes = in.substr(0, n);
        in.remove_prefix(n);
        break;
      }
      case 5:
        REQUIRE(in.size() >= 4);
        std::memcpy(&f.value, in.data(), 4);
        in.remove_prefix(4);
        break;
      default: FAIL("wire type ", key & 7);
    }
    out.push_back(f);
  }
  return out;
}

std::vector<Field> all(const std::vector<Field>& fs, int number) {
  std::vector<Field> out;
  for (const Field& f : fs)
    if (f.number == number) out.push_back(f);
  return out;
}

std::string_view one(const std::vector<Field>& fs, int number) {
  const auto found = all(fs, number);
  REQUIRE(found.size() == 1);
  return found[0].bytes;
}

// Checks the whole file for `config`; returns how many nodes of each op type it has.
std::map<std::string, int> check_export(const vg::ViTConfig& config) {
  vg::ViT model(config, 7);
  const std::string file = vg::onnx_model_bytes(model);
  const auto m = fields(file);
  CHECK(all(m, 1).at(0).value == 8);  // ir_version
  const auto opset = fields(one(m, 8));
  CHECK(one(opset, 1).empty());  // the default domain
  CHECK(all(opset, 2).at(0).value == 17);
  const auto graph = fields(one(m, 7));

  std::set<std::string> defined;
  for (const Field& in : all(graph, 11)) defined.insert(std::string(one(fields(in.bytes), 1)));
  CHECK(defined == std::set<std::string>{"images"});
  // Initializers: each parameter under its own name, with its float32 bytes.
  std::map<std::string, std::string_view> stored;
  for (const Field& t : all(graph, 5)) {
    const auto tf = fields(t.bytes);
    const std::string name(one(tf, 8));
    CHECK(defined.insert(name).second);
    stored[name] = one(tf, 9);
  }
  for (const vg::Parameter& p : model.named_parameters()) {
    INFO(p.name);
    REQUIRE(stored.count(p.name));
    CHECK(stored[p.name] == std::string_view(static_cast<const char*>(p.tensor.raw_data()),
                                             size_t(p.tensor.numel()) * 4));
  }
  // Nodes in order: every input defined before, every output new.
  std::map<std::string, int> ops;
  for (const Field& n : all(graph, 1)) {
    const auto nf = fields(n.bytes);
    const std::string op(one(nf, 4));
    ++ops[op];
    for (const Field& in : all(nf, 1)) {
      INFO(op, " reads ", in.bytes);
      CHECK(defined.count(std::string(in.bytes)));
    }
    for (const Field& out : all(nf, 2)) CHECK(defined.insert(std::string(out.bytes)).second);
  }
  const auto outputs = all(graph, 12);
  REQUIRE(outputs.size() == 1);
  CHECK(one(fields(outputs[0].bytes), 1) == "logits");
  CHECK(defined.count("logits"));
  return ops;
}

}  // namespace

TEST_CASE("ONNX export of a LayerNorm ViT with class-token pooling") {
  const auto ops = check_export(vg::testing::small_config(2));
  CHECK(ops.at("LayerNormalization") == 2 * 2 + 1);
  CHECK(ops.at("Softmax") == 2);
  CHECK(ops.at("Erf") == 2);
  CHECK(ops.at("Conv") == 1);
  CHECK(ops.count("ReduceL2") == 0);
}

TEST_CASE("ONNX export of a LearnableScaler ViT with GRN, LayerScale and average pooling") {
  vg::ViTConfig c = vg::testing::small_config(3);
  c.norm = vg::nn::NormKind::learnable_scaler;
  c.grn = true;
  c.layerscale = vg::LayerScaleSetting::fixed(0.1);
  c.global_pool = vg::GlobalPool::avg;
  const auto ops = check_export(c);
  CHECK(ops.count("LayerNormalization") == 0);
  CHECK(ops.at("ReduceL2") == 3);     // one GRN per block
  CHECK(ops.at("ReduceMean") == 3 + 1);  // GRN's channel mean, and the pooling
  CHECK(ops.at("Softmax") == 3);
}

TEST_CASE("ONNX export of a ViT with a convolutional stem: a Conv and a GELU per stage") {
  vg::ViTConfig c = vg::testing::small_config(2);
  c.stem = {vg::nn::StemStage(4, 1), 8};  // 28 -> 28 -> 14, cut into 2x2 patches
  c.patch_size = 2;
  const auto ops = check_export(c);
  CHECK(ops.at("Conv") == 2 + 1);  // the stem's, then the patch embedding's
  CHECK(ops.at("Erf") == 2 + 2);   // the stem's GELUs, then the MLPs'
  CHECK(ops.at("Softmax") == 2);
}

TEST_CASE("ONNX export of a stem with LayerNorms: each between two Transposes, before its GELU") {
  vg::ViTConfig c = vg::testing::small_config(2);
  c.stem = {vg::nn::StemStage(4, 1), 8};
  c.stem_norm = vg::nn::StemNorm::layernorm;
  c.patch_size = 2;
  const vg::ViTConfig plain_config = [&] {
    vg::ViTConfig p = c;
    p.stem_norm = vg::nn::StemNorm::none;
    return p;
  }();
  const auto ops = check_export(c), plain = check_export(plain_config);
  CHECK(ops.at("LayerNormalization") == plain.at("LayerNormalization") + 2);
  CHECK(ops.at("Transpose") == plain.at("Transpose") + 2 * 2);  // to NHWC and back, per stage
  CHECK(ops.at("Conv") == 2 + 1);
  CHECK(ops.at("Erf") == 2 + 2);
}
