#pragma once
// An op's name, interned: every distinct name is stored once for the whole process and an op holds
// a pointer to it (8 bytes and no block of its own per op: issue 22's flat Program, where a
// 126,000-op step repeats a few dozen names). It reads as a std::string_view; assigning any string
// interns it. Thread-safe (the sweep builds Programs on several threads). The stored names live
// until exit: a long fuzz run over Program files grows the pool by every distinct name it reads.
#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace meshsim {

class OpName {
 public:
  OpName() = default;             // the empty name
  OpName(std::string_view text);  // NOLINT(google-explicit-constructor): names are strings
  OpName(const char* text) : OpName(std::string_view(text)) {}         // NOLINT
  OpName(const std::string& text) : OpName(std::string_view(text)) {}  // NOLINT

  std::string_view view() const { return text_ != nullptr ? std::string_view(*text_) : ""; }
  operator std::string_view() const { return view(); }  // NOLINT
  std::string str() const { return std::string(view()); }

  // std::string_view's reading functions.
  bool empty() const { return view().empty(); }
  std::size_t size() const { return view().size(); }
  std::size_t find(std::string_view s, std::size_t pos = 0) const { return view().find(s, pos); }
  std::size_t rfind(std::string_view s, std::size_t pos = std::string_view::npos) const {
    return view().rfind(s, pos);
  }
  std::string_view substr(std::size_t pos, std::size_t n = std::string_view::npos) const {
    return view().substr(pos, n);
  }
  bool starts_with(std::string_view s) const { return view().starts_with(s); }
  bool ends_with(std::string_view s) const { return view().ends_with(s); }

  // Interned: equal texts share one pointer, but the empty name has two forms (default, interned).
  friend bool operator==(const OpName& a, const OpName& b) {
    return a.text_ == b.text_ || a.view() == b.view();
  }
  friend bool operator==(const OpName& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const OpName& a, const char* b) { return a.view() == b; }
  friend bool operator==(const OpName& a, const std::string& b) { return a.view() == b; }

 private:
  const std::string* text_ = nullptr;
};

std::ostream& operator<<(std::ostream& os, const OpName& name);

}  // namespace meshsim

template <>
struct fmt::formatter<meshsim::OpName> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const meshsim::OpName& name, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(name.view(), ctx);
  }
};
