// A small well-formedness check for the SVG the tools write: balanced tags, one root,
// quoted attributes, escaped ampersands. Enough to catch a broken writer without a parser.
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace vg::testing {

// Empty when `xml` is well-formed, otherwise what is wrong and where.
inline std::string xml_problem(const std::string& xml) {
  std::vector<std::string> open;
  size_t roots = 0, i = 0;
  auto bad_ampersand = [](const std::string& text) {
    for (size_t a = text.find('&'); a != std::string::npos; a = text.find('&', a + 1)) {
      size_t b = a + 1;
      while (b < text.size() && std::isalnum(static_cast<unsigned char>(text[b]))) ++b;
      if (b == a + 1 || b >= text.size() || text[b] != ';') return true;
    }
    return false;
  };
  while (i < xml.size()) {
    const size_t lt = xml.find('<', i);
    const std::string text = xml.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    if (bad_ampersand(text)) return "unescaped & in text near offset " + std::to_string(i);
    if (lt == std::string::npos) break;
    if (open.empty() && roots > 0 && text.find_first_not_of(" \n") != std::string::npos)
      return "text after the root element";
    const size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) return "unclosed tag at offset " + std::to_string(lt);
    const std::string tag = xml.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (tag.empty()) return "empty tag at offset " + std::to_string(lt);
    if (tag[0] == '?' || tag[0] == '!') continue;
    size_t quotes = 0;
    for (char c : tag) quotes += c == '"';
    if (quotes % 2) return "unbalanced quotes in <" + tag + ">";
    if (bad_ampersand(tag)) return "unescaped & in <" + tag + ">";
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (open.empty() && ++roots > 1) return "second root element <" + name + ">";
    if (tag.back() != '/') open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return roots == 1 ? "" : "no root element";
}

}  // namespace vg::testing
