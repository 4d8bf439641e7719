// The Protocol Buffers wire format, as much of it as writing a message takes (ONNX files
// are one protobuf message). A message is a sequence of fields, each a key (field number
// and wire type) and a value:
//   varint            integers, 7 bits a byte, low bits first, high bit = "more follows"
//   32-bit            a float, little-endian
//   length-delimited  a varint length, then the bytes (strings, nested messages)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vg {

class ProtoWriter {
 public:
  // An integer field (int32, int64, enum, bool); negative values take ten bytes, as in protobuf.
  ProtoWriter& varint(int field, int64_t value);
  // A float field.
  ProtoWriter& fixed32(int field, float value);
  // A string or bytes field.
  ProtoWriter& bytes(int field, std::string_view value);
  // A nested message.
  ProtoWriter& message(int field, const ProtoWriter& nested) { return bytes(field, nested.str()); }

  const std::string& str() const { return out_; }

 private:
  void key(int field, int wire_type);
  void raw_varint(uint64_t value);
  std::string out_;
};

}  // namespace vg
