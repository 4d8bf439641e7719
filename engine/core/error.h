// The one exception type of vitgrad, and helpers that build its messages.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace vg {

// Every failure vitgrad reports: bad shapes, bad files, bad flags. The message names the
// op or layer and the numbers involved, e.g.
// "LayerScale(dim=768): input last axis is 512, expected 768 (input shape [2,196,512])".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "[2,196,768]": how shapes appear in every message.
inline std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? "," : "") << shape[i];
  s << ']';
  return s.str();
}

// Concatenates anything printable into one message.
template <class... Parts>
std::string cat_str(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// Throws vg::Error with the concatenated message when `ok` is false.
template <class... Parts>
void check(bool ok, const Parts&... parts) {
  if (!ok) throw Error(cat_str(parts...));
}

}  // namespace vg
