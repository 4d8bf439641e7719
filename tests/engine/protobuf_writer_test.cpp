// The protobuf wire format, byte for byte against encodings worked out by hand from the
// protobuf documentation's rules.
#include <doctest/doctest.h>

#include "engine/io/protobuf_writer.h"

using vg::ProtoWriter;

namespace {
std::string hex(const std::string& bytes) {
  std::string out;
  const char* digits = "0123456789abcdef";
  for (unsigned char b : bytes) out += std::string{digits[b >> 4], digits[b & 15], ' '};
  return out.empty() ? out : out.substr(0, out.size() - 1);
}
}  // namespace

TEST_CASE("protobuf: varints are 7 bits a byte, low bits first, keys are field << 3 | type") {
  CHECK(hex(ProtoWriter().varint(1, 1).str()) == "08 01");
  CHECK(hex(ProtoWriter().varint(1, 150).str()) == "08 96 01");  // the documentation's example
  CHECK(hex(ProtoWriter().varint(2, 300).str()) == "10 ac 02");
  CHECK(hex(ProtoWriter().varint(20, 7).str()) == "a0 01 07");  // a key above 15 takes 2 bytes
  CHECK(hex(ProtoWriter().varint(1, -1).str()) == "08 ff ff ff ff ff ff ff ff ff 01");
}

TEST_CASE("protobuf: floats are 4 little-endian bytes, strings and messages length-prefixed") {
  CHECK(hex(ProtoWriter().fixed32(2, 1.0f).str()) == "15 00 00 80 3f");
  CHECK(hex(ProtoWriter().bytes(2, "testing").str()) == "12 07 74 65 73 74 69 6e 67");
  ProtoWriter inner;
  inner.varint(1, 150);
  CHECK(hex(ProtoWriter().message(3, inner).str()) == "1a 03 08 96 01");
  CHECK(hex(ProtoWriter().bytes(1, std::string(200, 'x')).str().substr(0, 3)) == "0a c8 01");
}
