#include "engine/io/onnx_graph.h"

#include <cstring>

namespace vg {
namespace {

// Field numbers and enum values of onnx.proto.
namespace model { enum { ir_version = 1, producer_name = 2, doc_string = 6, graph = 7, opset_import = 8 }; }
namespace opset_id { enum { domain = 1, version = 2 }; }
namespace graph { enum { node = 1, name = 2, initializer = 5, input = 11, output = 12 }; }
namespace node { enum { input = 1, output = 2, name = 3, op_type = 4, attribute = 5 }; }
namespace attribute { enum { name = 1, f = 2, i = 3, ints = 8, type = 20 }; }
namespace attribute_type { enum { FLOAT = 1, INT = 2, INTS = 7 }; }
namespace tensor { enum { dims = 1, data_type = 2, name = 8, raw_data = 9 }; }
namespace tensor_type { enum { FLOAT = 1, INT64 = 7 }; }
namespace value_info { enum { name = 1, type = 2 }; }
namespace type_proto { enum { tensor_type = 1, elem_type = 1, shape = 2, dim = 1, dim_value = 1, dim_param = 2 }; }

constexpr int64_t kIrVersion = 8;  // the IR of opsets 17 and 18

ProtoWriter tensor_proto(const std::string& name, const std::vector<int64_t>& dims, int type,
                         const void* data, size_t bytes) {
  ProtoWriter t;
  for (int64_t d : dims) t.varint(tensor::dims, d);
  t.varint(tensor::data_type, type);
  t.bytes(tensor::name, name);
  t.bytes(tensor::raw_data, std::string_view(static_cast<const char*>(data), bytes));
  return t;
}

}  // namespace

OnnxAttribute onnx_int(const std::string& name, int64_t value) {
  return {.name = name, .kind = OnnxAttribute::Kind::integer, .i = value, .f = 0, .ints = {}};
}
OnnxAttribute onnx_float(const std::string& name, float value) {
  return {.name = name, .kind = OnnxAttribute::Kind::floating, .i = 0, .f = value, .ints = {}};
}
OnnxAttribute onnx_ints(const std::string& name, std::vector<int64_t> values) {
  return {.name = name, .kind = OnnxAttribute::Kind::integers, .i = 0, .f = 0,
          .ints = std::move(values)};
}

std::string OnnxGraph::unique(const std::string& name) {
  std::string candidate = name;
  for (int n = 2; names_.count(candidate); ++n) candidate = name + "_" + std::to_string(n);
  names_.insert(candidate);
  return candidate;
}

std::string OnnxGraph::initializer(const std::string& name, const Tensor& value) {
  check(value.dtype() == DType::f32, "ONNX export: '", name, "' is ",
        dtype_name(value.dtype()), ", only float32 weights are written");
  const std::string id = unique(name);
  initializers_.message(graph::initializer,
                        tensor_proto(id, value.shape(), tensor_type::FLOAT, value.raw_data(),
                                     size_t(value.numel()) * 4));
  return id;
}

std::string OnnxGraph::ints(const std::string& name, const std::vector<int64_t>& values) {
  const std::string id = unique(name);
  initializers_.message(graph::initializer,
                        tensor_proto(id, {int64_t(values.size())}, tensor_type::INT64,
                                     values.data(), values.size() * 8));
  return id;
}

std::string OnnxGraph::scalar(const std::string& name, float value) {
  const std::string id = unique(name);
  initializers_.message(graph::initializer, tensor_proto(id, {}, tensor_type::FLOAT, &value, 4));
  return id;
}

std::string OnnxGraph::node(const std::string& op_type, const std::vector<std::string>& inputs,
                            const std::string& output, const std::vector<OnnxAttribute>& attributes) {
  const std::string id = unique(output);
  ProtoWriter n;
  for (const std::string& in : inputs) n.bytes(node::input, in);
  n.bytes(node::output, id).bytes(node::name, id).bytes(node::op_type, op_type);
  for (const OnnxAttribute& a : attributes) {
    ProtoWriter w;
    w.bytes(attribute::name, a.name);
    switch (a.kind) {
      case OnnxAttribute::Kind::integer:
        w.varint(attribute::i, a.i).varint(attribute::type, attribute_type::INT);
        break;
      case OnnxAttribute::Kind::floating:
        w.fixed32(attribute::f, a.f).varint(attribute::type, attribute_type::FLOAT);
        break;
      case OnnxAttribute::Kind::integers:
        for (int64_t v : a.ints) w.varint(attribute::ints, v);
        w.varint(attribute::type, attribute_type::INTS);
        break;
    }
    n.message(node::attribute, w);
  }
  graph_nodes_.message(graph::node, n);
  return id;
}

ProtoWriter OnnxGraph::value_info(const std::string& name, const std::vector<int64_t>& dims) const {
  ProtoWriter shape;
  for (int64_t d : dims) {
    ProtoWriter dim;
    if (d < 0)
      dim.bytes(type_proto::dim_param, "batch");
    else
      dim.varint(type_proto::dim_value, d);
    shape.message(type_proto::dim, dim);
  }
  ProtoWriter tensor;
  tensor.varint(type_proto::elem_type, tensor_type::FLOAT).message(type_proto::shape, shape);
  ProtoWriter type;
  type.message(type_proto::tensor_type, tensor);
  ProtoWriter info;
  info.bytes(value_info::name, name).message(value_info::type, type);
  return info;
}

void OnnxGraph::input(const std::string& name, const std::vector<int64_t>& dims) {
  inputs_.message(graph::input, value_info(unique(name), dims));
}

void OnnxGraph::output(const std::string& name, const std::vector<int64_t>& dims) {
  outputs_.message(graph::output, value_info(name, dims));
}

std::string OnnxGraph::model_bytes(int64_t opset, const std::string& producer_name,
                                   const std::string& doc) const {
  ProtoWriter g;
  g.bytes(graph::name, name_);
  // Fields of a message may come in any order; the writers hold each repeated field's run.
  const std::string body = graph_nodes_.str() + initializers_.str() + inputs_.str() + outputs_.str();
  ProtoWriter id;
  id.bytes(opset_id::domain, "").varint(opset_id::version, opset);
  ProtoWriter m;
  m.varint(model::ir_version, kIrVersion)
      .bytes(model::producer_name, producer_name)
      .bytes(model::doc_string, doc)
      .message(model::opset_import, id)
      .bytes(model::graph, g.str() + body);
  return m.str();
}

}  // namespace vg
