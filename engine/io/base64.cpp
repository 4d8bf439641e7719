#include "engine/io/base64.h"

#include <array>

#include "engine/core/error.h"

namespace vg {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr uint8_t kInvalid = 0xff, kPad = 0xfe;

constexpr std::array<uint8_t, 256> make_table() {
  std::array<uint8_t, 256> table{};
  for (auto& v : table) v = kInvalid;
  for (uint8_t i = 0; i < 64; ++i) table[static_cast<uint8_t>(kAlphabet[i])] = i;
  table['='] = kPad;
  return table;
}
constexpr std::array<uint8_t, 256> kTable = make_table();

}  // namespace

void append_base64(std::string& out, const uint8_t* b, size_t count) {
  const size_t start = out.size();
  out.resize(start + (count + 2) / 3 * 4);
  char* o = out.data() + start;
  size_t i = 0;
  for (; i + 3 <= count; i += 3, o += 4) {
    const uint32_t v = uint32_t(b[i]) << 16 | uint32_t(b[i + 1]) << 8 | b[i + 2];
    o[0] = kAlphabet[v >> 18];
    o[1] = kAlphabet[(v >> 12) & 63];
    o[2] = kAlphabet[(v >> 6) & 63];
    o[3] = kAlphabet[v & 63];
  }
  if (i < count) {
    const uint32_t v = uint32_t(b[i]) << 16 | (i + 1 < count ? uint32_t(b[i + 1]) << 8 : 0);
    o[0] = kAlphabet[v >> 18];
    o[1] = kAlphabet[(v >> 12) & 63];
    o[2] = i + 1 < count ? kAlphabet[(v >> 6) & 63] : '=';
    o[3] = '=';
  }
}

void Base64Decoder::decode_quad(const char* q, size_t start) {
  uint8_t d[4];
  for (size_t k = 0; k < 4; ++k) {
    d[k] = kTable[static_cast<uint8_t>(q[k])];
    if (d[k] == kInvalid)
      throw Error(cat_str(what_, ": character ", start + k, " of the base64 text is not base64"));
    if (padded_ || (d[k] == kPad && (k < 2 || (k == 2 && q[3] != '='))))
      throw Error(cat_str(what_, ": base64 padding '=' before the end of the text (character ",
                          start + k, ")"));
  }
  const uint32_t v = uint32_t(d[0]) << 18 | uint32_t(d[1]) << 12 |
                     uint32_t(d[2] == kPad ? 0 : d[2]) << 6 | (d[3] == kPad ? 0 : d[3]);
  bytes_.push_back(static_cast<uint8_t>(v >> 16));
  if (d[2] != kPad) bytes_.push_back(static_cast<uint8_t>(v >> 8));
  if (d[3] != kPad) bytes_.push_back(static_cast<uint8_t>(v));
  padded_ = d[3] == kPad;
}

void Base64Decoder::feed(const char* text, size_t count) {
  const size_t base = seen_;  // the characters before this piece
  seen_ += count;
  size_t i = 0;
  if (carried_ > 0) {  // a quad split between the previous piece and this one
    while (carried_ < 4 && i < count) carry_[carried_++] = text[i++];
    if (carried_ < 4) return;
    carried_ = 0;
    decode_quad(carry_, base + i - 4);
  }
  while (i + 4 <= count) {
    // The hot loop: quads of plain characters straight into the bytes; padding and bad
    // characters leave it for decode_quad, which knows what to do with them.
    const size_t quads = (count - i) / 4, filled = bytes_.size();
    bytes_.resize(filled + quads * 3);
    uint8_t* out = bytes_.data() + filled;
    size_t done = 0;
    for (; done < quads && !padded_; ++done, out += 3) {
      const char* q = text + i + 4 * done;
      const uint8_t a = kTable[static_cast<uint8_t>(q[0])], b = kTable[static_cast<uint8_t>(q[1])],
                    c = kTable[static_cast<uint8_t>(q[2])], d = kTable[static_cast<uint8_t>(q[3])];
      if ((a | b | c | d) >= 64) break;
      const uint32_t v = uint32_t(a) << 18 | uint32_t(b) << 12 | uint32_t(c) << 6 | d;
      out[0] = static_cast<uint8_t>(v >> 16);
      out[1] = static_cast<uint8_t>(v >> 8);
      out[2] = static_cast<uint8_t>(v);
    }
    bytes_.resize(filled + done * 3);
    i += 4 * done;
    if (i + 4 <= count) {
      decode_quad(text + i, base + i);
      i += 4;
    }
  }
  while (i < count) carry_[carried_++] = text[i++];
}

void Base64Decoder::finish() {
  if (carried_ != 0)
    throw Error(cat_str(what_, ": the base64 text has ", seen_,
                        " characters, not a multiple of 4 (truncated?)"));
}

}  // namespace vg
