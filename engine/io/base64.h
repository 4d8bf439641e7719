// Base64 (RFC 4648, standard alphabet, '=' padding), the text form of a checkpoint's large
// tensors: their little-endian bytes in a JSON string, a third larger than the bytes
// themselves and exact by construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vg {

// Appends the base64 text of `bytes` to `out`.
void append_base64(std::string& out, const uint8_t* bytes, size_t count);

// Decodes base64 text that arrives in pieces (a reader's buffer at a time) into `bytes`.
// Whitespace is not allowed; padding only at the very end. Errors throw vg::Error with
// `what` and the offending character's position within the text.
class Base64Decoder {
 public:
  explicit Base64Decoder(std::vector<uint8_t>& bytes, std::string what)
      : bytes_(bytes), what_(std::move(what)) {}
  void feed(const char* text, size_t count);
  // The text is complete: checks its length and padding.
  void finish();

 private:
  void decode_quad(const char* quad, size_t start);  // start: its place in the text

  std::vector<uint8_t>& bytes_;
  std::string what_;
  char carry_[4] = {};
  size_t carried_ = 0;
  size_t seen_ = 0;      // characters fed so far
  bool padded_ = false;  // a quad with '=' was decoded: nothing may follow
};

}  // namespace vg
