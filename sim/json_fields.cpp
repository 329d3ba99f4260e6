#include "sim/json_fields.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

void JsonField::fail(std::string_view expected) const {
  throw InputError(fmt::format("{}: field '{}': expected {}", origin_,
                               path_.empty() ? "(top)" : path_, expected));
}

JsonField JsonField::operator[](std::string_view key) const {
  if (!value_->is_object()) fail("an object");
  const auto it = value_->find(key);
  const std::string child = path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  if (it == value_->end()) {
    throw InputError(fmt::format("{}: field '{}': missing", origin_, child));
  }
  return JsonField(*it, origin_, child);
}

JsonField JsonField::at(std::size_t index) const {
  expect_array();
  if (index >= value_->size()) fail(fmt::format("at least {} elements", index + 1));
  return JsonField((*value_)[index], origin_, fmt::format("{}[{}]", path_, index));
}

bool JsonField::has(std::string_view key) const {
  return value_->is_object() && value_->find(key) != value_->end();
}

std::size_t JsonField::size() const {
  expect_array();
  return value_->size();
}

void JsonField::expect_keys(std::initializer_list<std::string_view> allowed) const {
  if (!value_->is_object()) fail("an object");
  for (const auto& item : value_->items()) {
    bool known = false;
    for (auto k : allowed) known = known || item.key() == k;
    if (!known) {
      const std::string child =
          path_.empty() ? item.key() : fmt::format("{}.{}", path_, item.key());
      throw InputError(fmt::format("{}: field '{}': unknown field", origin_, child));
    }
  }
}

std::int64_t JsonField::as_int(std::int64_t min, std::int64_t max) const {
  const auto expected = fmt::format("an integer in [{}, {}]", min, max);
  if (value_->is_number_unsigned()) {
    const auto v = value_->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(max)) fail(expected);
    const auto s = static_cast<std::int64_t>(v);
    if (s < min) fail(expected);
    return s;
  }
  if (!value_->is_number_integer()) fail(expected);
  const auto v = value_->get<std::int64_t>();
  if (v < min || v > max) fail(expected);
  return v;
}

double JsonField::as_number() const {
  if (!value_->is_number()) fail("a number");
  return value_->get<double>();
}

double JsonField::as_positive() const {
  if (!value_->is_number()) fail("a positive number");
  const double v = value_->get<double>();
  if (!(v > 0) || v > 1e300) fail("a positive number");
  return v;
}

bool JsonField::as_bool() const {
  if (!value_->is_boolean()) fail("true or false");
  return value_->get<bool>();
}

std::string JsonField::as_string() const {
  if (!value_->is_string()) fail("a string");
  return value_->get<std::string>();
}

void JsonField::expect_array() const {
  if (!value_->is_array()) fail("an array");
}

nlohmann::json parse_json_text(std::string_view text, std::string_view origin) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number past double
    std::string msg = e.what();
    for (char& c : msg) {
      if (c == '\n') c = ' ';
    }
    throw InputError(fmt::format("{}: not valid JSON: {}", origin, msg));
  }
}

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(fmt::format("{}: is a folder, expected a file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the file", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace meshsim
