#include "engine/io/protobuf_writer.h"

#include <cstring>

namespace vg {

void ProtoWriter::raw_varint(uint64_t value) {
  while (value >= 0x80) {
    out_ += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out_ += static_cast<char>(value);
}

void ProtoWriter::key(int field, int wire_type) {
  raw_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

ProtoWriter& ProtoWriter::varint(int field, int64_t value) {
  key(field, 0);
  raw_varint(static_cast<uint64_t>(value));
  return *this;
}

ProtoWriter& ProtoWriter::fixed32(int field, float value) {
  key(field, 5);
  char le[4];
  std::memcpy(le, &value, 4);  // little-endian hosts only (safetensors.cpp checks)
  out_.append(le, 4);
  return *this;
}

ProtoWriter& ProtoWriter::bytes(int field, std::string_view value) {
  key(field, 2);
  raw_varint(value.size());
  out_.append(value);
  return *this;
}

}  // namespace vg
