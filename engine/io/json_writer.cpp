#include "engine/io/json_writer.h"

#include "engine/io/base64.h"

namespace vg {

using nlohmann::json;

namespace {
// Whether a member goes last: the tensor bytes, by name or by type.
bool is_bulk(const std::string& key, const json& value) {
  return value.is_binary() || (key == "base64" && value.is_string());
}

// Plain ASCII with nothing to escape, as base64 text always is: copied as it stands, which
// is many times faster than nlohmann's escaping for the megabytes of a tensor.
bool is_plain(const std::string& s) {
  unsigned bad = 0;  // a branch-free loop, which the compiler vectorises
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    bad |= unsigned(u < 0x20) | unsigned(u >= 0x80) | unsigned(u == '"') | unsigned(u == '\\');
  }
  return bad == 0;
}

}  // namespace

void append_json(std::string& out, const json& j) {
  if (j.is_binary()) {
    const json::binary_t& bytes = j.get_binary();
    out += '"';
    append_base64(out, bytes.data(), bytes.size());
    out += '"';
  } else if (j.is_object()) {
    out += '{';
    bool first = true;
    for (const bool bulk : {false, true})
      for (const auto& [key, value] : j.items()) {
        if (is_bulk(key, value) != bulk) continue;
        if (!first) out += ',';
        first = false;
        out += json(key).dump();
        out += ':';
        append_json(out, value);
      }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i) out += ',';
      append_json(out, j[i]);
    }
    out += ']';
  } else if (j.is_string() && is_plain(j.get_ref<const std::string&>())) {
    out += '"';
    out += j.get_ref<const std::string&>();
    out += '"';
  } else {
    out += j.dump();
  }
}

size_t json_size_hint(const json& j) {
  if (j.is_binary()) return j.get_binary().size() / 3 * 4 + 8;
  if (j.is_string()) return j.get_ref<const std::string&>().size() + 8;
  size_t n = 16;
  if (j.is_object())
    for (const auto& [key, value] : j.items()) n += key.size() + 4 + json_size_hint(value);
  else if (j.is_array())
    for (const json& value : j) n += 1 + json_size_hint(value);
  return n;
}

}  // namespace vg
