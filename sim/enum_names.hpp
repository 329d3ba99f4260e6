#pragma once
// Names of scoped enums kept in one std::array per enum (indexed by the enumerator's value), for
// printing and for parsing user input and JSON.
#include <array>
#include <optional>
#include <string_view>

namespace meshsim {

template <typename Enum, std::size_t N>
std::string_view enum_name(const std::array<std::string_view, N>& names, Enum value) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : std::string_view("?");
}

template <typename Enum, std::size_t N>
std::optional<Enum> parse_enum_name(const std::array<std::string_view, N>& names,
                                    std::string_view s) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace meshsim
