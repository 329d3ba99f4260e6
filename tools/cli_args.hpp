#pragma once
// Flag parsing for the sub-commands: declared options, "--flag VALUE" or "--flag=VALUE", and
// one-line errors (InputError) that name the flag and what was expected.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace meshsim {

// An output flag's path is checked when the flags are parsed, before any work starts
// (tools/output_file.hpp): a file's folder must exist and be writable, a folder must be creatable.
enum class OutputKind { none, file, folder };

struct OptionSpec {
  std::string name;        // "--cp"
  std::string value_name;  // "N"; empty for a switch such as "--json"
  std::string help;
  OutputKind output = OutputKind::none;
};

class Args {
 public:
  // Throws InputError for an unknown flag, a missing value, a repeated flag or an output path
  // that cannot be written (unless --help was given).
  Args(std::string command, std::vector<OptionSpec> specs, std::span<const std::string> argv);

  bool help_requested() const { return help_; }
  bool has(std::string_view name) const;
  // Whether the command declares the flag (shared readers of flags only some commands take).
  bool declares(std::string_view name) const;
  std::string get(std::string_view name, std::string_view fallback) const;
  // Integer in [min, max]; the error names the flag and the range.
  std::int64_t get_int(std::string_view name, std::int64_t fallback, std::int64_t min,
                       std::int64_t max) const;
  // A non-negative number (seconds, bytes); `fallback` when absent.
  double get_number(std::string_view name, double fallback, double max) const;
  // One of `choices`.
  std::string get_choice(std::string_view name, std::string_view fallback,
                         std::initializer_list<std::string_view> choices) const;

  std::string help_text(std::string_view summary, std::string_view example) const;

 private:
  const OptionSpec& spec(std::string_view name) const;
  void check_outputs() const;
  const std::string* find(std::string_view name) const;

  std::string command_;
  std::vector<OptionSpec> specs_;
  std::vector<std::pair<std::string, std::string>> values_;
  bool help_ = false;
};

// Whether the raw arguments name `flag` (as "--flag" or "--flag=..."): for a command whose mode
// one flag selects before its own flags are parsed.
bool names_flag(std::span<const std::string> argv, std::string_view flag);

}  // namespace meshsim
