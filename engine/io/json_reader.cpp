#include "engine/io/json_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/core/error.h"
#include "engine/io/base64.h"

namespace vg {
namespace {

using nlohmann::json;

constexpr size_t kChunk = size_t(1) << 20;  // bytes read from a file at a time

bool valid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned c = *p++;
    if (c < 0x80) continue;
    int more = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : -1;
    if (more < 0 || c > 0xf4 || end - p < more) return false;
    const unsigned first = *p;  // the first continuation byte bounds overlong and surrogates
    if ((c == 0xe0 && first < 0xa0) || (c == 0xed && first > 0x9f) ||
        (c == 0xf0 && first < 0x90) || (c == 0xf4 && first > 0x8f))
      return false;
    for (; more > 0; --more)
      if ((*p++ & 0xc0) != 0x80) return false;
  }
  return true;
}

class Reader {
 public:
  Reader(int fd, std::string_view text, std::string source)
      : fd_(fd), source_(std::move(source)) {
    if (fd_ < 0) {
      base_ = p_ = text.data();
      end_ = text.data() + text.size();
    } else {
      buffer_.resize(kChunk);
      base_ = p_ = end_ = buffer_.data();
    }
  }

  json document() {
    json doc;
    skip_space();
    value(doc, 0);
    skip_space();
    if (peek() >= 0) syntax_error();
    return doc;
  }

 private:
  // --- input ---
  bool refill() {
    if (fd_ < 0) return false;
    offset_ += static_cast<uint64_t>(end_ - base_);
    ssize_t n;
    do n = ::read(fd_, buffer_.data(), buffer_.size());
    while (n < 0 && errno == EINTR);
    if (n < 0) throw Error(cat_str(source_, ": read failed (", std::strerror(errno), ")"));
    p_ = buffer_.data();
    end_ = p_ + n;
    return n > 0;
  }
  int peek() {
    if (p_ == end_ && !refill()) return -1;
    return static_cast<unsigned char>(*p_);
  }
  char take() {
    if (peek() < 0) syntax_error();
    return *p_++;
  }
  uint64_t position() const { return offset_ + static_cast<uint64_t>(p_ - base_); }
  [[noreturn]] void syntax_error() { syntax_error_at(position()); }
  [[noreturn]] void syntax_error_at(uint64_t at) {
    throw Error(cat_str(source_, ": not a valid JSON document (truncated or damaged?) at byte ",
                        at + 1));
  }
  void skip_space() {
    for (int c = peek(); c == ' ' || c == '\n' || c == '\r' || c == '\t'; c = peek()) ++p_;
  }
  void expect(char c) {
    if (take() != c) {
      --p_;
      syntax_error();
    }
  }

  // --- values ---
  void value(json& out, int depth) {
    if (depth > kJsonMaxDepth)
      throw Error(cat_str(source_, ": nesting deeper than ", kJsonMaxDepth, " levels at ",
                          where()));
    switch (peek()) {
      case '{': return object(out, depth);
      case '[': return array(out, depth);
      case '"': {
        std::string s;
        string(s);
        out = std::move(s);
        return;
      }
      case 't': return literal("true", out, json(true));
      case 'f': return literal("false", out, json(false));
      case 'n': return literal("null", out, json(nullptr));
      default: return number(out);
    }
  }

  void literal(const char* word, json& out, json v) {
    for (const char* w = word; *w; ++w) expect(*w);
    out = std::move(v);
  }

  void object(json& out, int depth) {
    expect('{');
    out = json::object();
    skip_space();
    if (peek() == '}') {
      ++p_;
      return;
    }
    for (;;) {
      skip_space();
      if (peek() != '"') syntax_error();
      std::string key;
      string(key);
      if (out.contains(key))
        throw Error(cat_str(source_, ": key '", key, "' appears twice ",
                            path_.empty() ? std::string("at the top level") : "in " + where()));
      skip_space();
      expect(':');
      skip_space();
      path_.push_back(key);
      json& slot = out[key];
      if (key == "base64" && peek() == '"')
        base64(slot);
      else
        value(slot, depth + 1);
      path_.pop_back();
      skip_space();
      const char c = take();
      if (c == '}') return;
      if (c != ',') {
        --p_;
        syntax_error();
      }
    }
  }

  void array(json& out, int depth) {
    expect('[');
    out = json::array();
    auto& items = out.get_ref<json::array_t&>();
    skip_space();
    if (peek() == ']') {
      ++p_;
      return;
    }
    path_.push_back("[]");
    for (;;) {
      skip_space();
      value(items.emplace_back(), depth + 1);
      skip_space();
      const char c = take();
      if (c == ']') break;
      if (c != ',') {
        --p_;
        syntax_error();
      }
    }
    path_.pop_back();
  }

  // "'model' / 'head.weight' / 'base64'", for messages.
  std::string where() const {
    std::string s;
    for (const std::string& key : path_) s += (s.empty() ? "'" : " / '") + key + "'";
    return s.empty() ? "the top level" : s;
  }

  void string(std::string& out) {
    expect('"');
    for (;;) {
      if (peek() < 0) syntax_error();
      // Plain characters up to the next quote, backslash or control character, in one go.
      const char* start = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20)
        ++p_;
      out.append(start, p_);
      if (p_ == end_) continue;
      const char c = *p_++;
      if (c == '"') break;
      if (c != '\\') {
        --p_;
        syntax_error();  // a raw control character
      }
      escape(out);
    }
    if (!valid_utf8(out))
      throw Error(cat_str(source_, ": a string in ", where(), " is not valid UTF-8"));
  }

  uint32_t hex4() {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = take();
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) {
        --p_;
        syntax_error();
      }
      v = v << 4 | static_cast<uint32_t>(d);
    }
    return v;
  }

  void escape(std::string& out) {
    const char c = take();
    switch (c) {
      case '"': case '\\': case '/': out += c; return;
      case 'b': out += '\b'; return;
      case 'f': out += '\f'; return;
      case 'n': out += '\n'; return;
      case 'r': out += '\r'; return;
      case 't': out += '\t'; return;
      case 'u': break;
      default: --p_; syntax_error();
    }
    uint32_t code = hex4();
    if (code >= 0xdc00 && code <= 0xdfff) syntax_error();  // a lone low surrogate
    if (code >= 0xd800 && code <= 0xdbff) {                 // needs its low half
      expect('\\');
      expect('u');
      const uint32_t low = hex4();
      if (low < 0xdc00 || low > 0xdfff) syntax_error();
      code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
    }
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | code >> 6);
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | code >> 12);
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | code >> 18);
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  // A tensor's bytes: decoded piece by piece as the text streams past.
  void base64(json& out) {
    expect('"');
    std::vector<uint8_t> bytes;
    Base64Decoder decoder(bytes, cat_str(source_, ": ", where()));
    for (;;) {
      if (peek() < 0) syntax_error();
      // Up to the closing quote (or the buffer's end), found by memchr: megabytes at a time.
      const auto* quote = static_cast<const char*>(std::memchr(p_, '"', size_t(end_ - p_)));
      const char* stop = quote ? quote : end_;
      if (std::memchr(p_, '\\', size_t(stop - p_)))
        throw Error(cat_str(source_, ": ", where(), " holds an escape, which base64 never needs"));
      decoder.feed(p_, static_cast<size_t>(stop - p_));
      p_ = stop;
      if (quote) {
        ++p_;
        break;
      }
    }
    decoder.finish();
    out = json::binary(std::move(bytes));
  }

  // A number in JSON's grammar: an integer as int64 (or uint64), anything else as double.
  void number(json& out) {
    const uint64_t start = position();
    std::string text;
    for (int c = peek(); c >= 0 && std::strchr("+-0123456789.eE", c) && text.size() < 1100;
         c = peek())
      text += static_cast<char>(*p_++);
    if (!is_json_number(text)) syntax_error_at(start);
    const char* first = text.data();
    const char* last = first + text.size();
    if (text.find_first_of(".eE") == std::string::npos) {
      int64_t i;
      if (std::from_chars(first, last, i).ec == std::errc()) {
        out = i;
        return;
      }
      uint64_t u;
      if (text[0] != '-' && std::from_chars(first, last, u).ec == std::errc()) {
        out = u;
        return;
      }
    }
    const double d = std::strtod(first, nullptr);  // underflow gives 0 or a denormal, as JSON
    if (!std::isfinite(d))
      throw Error(cat_str(source_, ": not a valid JSON document (number overflow parsing '", text,
                          "')"));
    out = d;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  static bool is_json_number(const std::string& s) {
    size_t i = 0;
    auto digits = [&] {
      const size_t from = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
      return i > from;
    };
    if (i < s.size() && s[i] == '-') ++i;
    if (i < s.size() && s[i] == '0') ++i;
    else if (!digits()) return false;
    if (i < s.size() && s[i] == '.' && (++i, !digits())) return false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (!digits()) return false;
    }
    return i == s.size();
  }

  int fd_;
  std::string source_;
  std::vector<char> buffer_;
  const char* base_ = nullptr;  // the start of the buffer (or of the text)
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  uint64_t offset_ = 0;  // file bytes before the buffer
  std::vector<std::string> path_;  // the keys (or "[]") leading to the current value
};

}  // namespace

json read_json_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error(cat_str(path, ": cannot open (", std::strerror(errno), ")"));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  try {
    json doc = Reader(fd, {}, path).document();
    ::close(fd);
    return doc;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

json read_json_text(std::string_view text, const std::string& source) {
  return Reader(-1, text, source).document();
}

}  // namespace vg
