#pragma once
// Typed access to fields of a JSON document with error messages that name the full path of the
// offending field ("ops[12].deps[0]: expected an integer"), for every loader of user files.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace meshsim {

class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string origin, std::string path = {})
      : value_(&value), origin_(std::move(origin)), path_(std::move(path)) {}

  const nlohmann::json& raw() const { return *value_; }
  const std::string& path() const { return path_; }

  // Child access; throws InputError when the object lacks `key` or is not an object.
  JsonField operator[](std::string_view key) const;
  JsonField at(std::size_t index) const;
  bool has(std::string_view key) const;
  std::size_t size() const;  // array length; throws unless an array
  // Rejects keys other than the listed ones (typos in hand-written files).
  void expect_keys(std::initializer_list<std::string_view> allowed) const;

  std::int64_t as_int(std::int64_t min, std::int64_t max) const;
  double as_number() const;
  double as_positive() const;
  bool as_bool() const;
  std::string as_string() const;
  void expect_array() const;

  [[noreturn]] void fail(std::string_view expected) const;

 private:
  const nlohmann::json* value_;
  std::string origin_;
  std::string path_;
};

// Parses text as JSON or throws InputError "<origin>: not valid JSON: ...".
nlohmann::json parse_json_text(std::string_view text, std::string_view origin);
// Reads a whole file; InputError when it cannot be opened.
std::string read_text_file(const std::string& path);

}  // namespace meshsim
