// An ONNX model written node by node: weights as initializers, ops as nodes, one graph
// input and output. Only what an inference graph of float32 tensors needs; the bytes follow
// onnx.proto (ModelProto, GraphProto, NodeProto, TensorProto, ...).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/io/protobuf_writer.h"

namespace vg {

// A node attribute: an integer, a float or a list of integers.
struct OnnxAttribute {
  std::string name;
  enum class Kind { integer, floating, integers } kind = Kind::integer;
  int64_t i = 0;
  float f = 0;
  std::vector<int64_t> ints;
};
OnnxAttribute onnx_int(const std::string& name, int64_t value);
OnnxAttribute onnx_float(const std::string& name, float value);
OnnxAttribute onnx_ints(const std::string& name, std::vector<int64_t> values);

class OnnxGraph {
 public:
  explicit OnnxGraph(std::string name) : name_(std::move(name)) {}

  // A stored float32 tensor named `name` (a parameter's own name); returns the name.
  std::string initializer(const std::string& name, const Tensor& value);
  // A stored int64 vector (shapes, axes, indices) or float32 scalar.
  std::string ints(const std::string& name, const std::vector<int64_t>& values);
  std::string scalar(const std::string& name, float value);
  // Adds a node `op_type` of the default domain and returns its output's name: `output`,
  // or `output` with a number appended when the name is taken.
  std::string node(const std::string& op_type, const std::vector<std::string>& inputs,
                   const std::string& output, const std::vector<OnnxAttribute>& attributes = {});
  // The graph's float32 input and output; a dimension of -1 is the symbolic "batch".
  void input(const std::string& name, const std::vector<int64_t>& dims);
  void output(const std::string& name, const std::vector<int64_t>& dims);

  // The ModelProto: IR version 8, the default domain at `opset`.
  std::string model_bytes(int64_t opset, const std::string& producer_name,
                          const std::string& doc) const;

 private:
  std::string unique(const std::string& name);
  ProtoWriter value_info(const std::string& name, const std::vector<int64_t>& dims) const;

  std::string name_;
  std::set<std::string> names_;
  ProtoWriter graph_nodes_, initializers_, inputs_, outputs_;
};

}  // namespace vg
