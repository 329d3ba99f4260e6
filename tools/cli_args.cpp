#include "tools/cli_args.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "tools/output_file.hpp"

namespace meshsim {

Args::Args(std::string command, std::vector<OptionSpec> specs, std::span<const std::string> argv)
    : command_(std::move(command)), specs_(std::move(specs)) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      throw InputError(
          fmt::format("meshsim {}: unexpected argument '{}' (flags start with --; "
                      "see meshsim {} --help)",
                      command_, arg, command_));
    }
    const auto eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const OptionSpec* found = nullptr;
    for (const auto& s : specs_) {
      if (s.name == name) found = &s;
    }
    if (found == nullptr) {
      throw InputError(fmt::format("meshsim {}: unknown flag {} (see meshsim {} --help)", command_,
                                   name, command_));
    }
    if (find(name) != nullptr) {
      throw InputError(fmt::format("{} given more than once", name));
    }
    std::string value;
    if (found->value_name.empty()) {
      if (eq != std::string::npos) throw InputError(fmt::format("{} takes no value", name));
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= argv.size()) {
        throw InputError(fmt::format("{} expects a value ({})", name, found->value_name));
      }
      value = argv[++i];
    }
    values_.emplace_back(name, std::move(value));
  }
  if (!help_) check_outputs();
}

void Args::check_outputs() const {
  for (const auto& [name, value] : values_) {
    const OptionSpec& s = spec(name);
    if (s.output == OutputKind::none) continue;
    if (value.empty()) throw InputError(fmt::format("{} expects a non-empty value", name));
    if (s.output == OutputKind::file) check_output_path(value, name);
    if (s.output == OutputKind::folder) check_output_dir(value, name);
  }
}

const std::string* Args::find(std::string_view name) const {
  for (const auto& [k, v] : values_) {
    if (k == name) return &v;
  }
  return nullptr;
}

const OptionSpec& Args::spec(std::string_view name) const {
  for (const auto& s : specs_) {
    if (s.name == name) return s;
  }
  throw InvariantError(fmt::format("flag {} read but not declared", name));
}

bool Args::declares(std::string_view name) const {
  return std::any_of(specs_.begin(), specs_.end(),
                     [&](const OptionSpec& s) { return s.name == name; });
}

bool Args::has(std::string_view name) const {
  spec(name);
  return find(name) != nullptr;
}

std::string Args::get(std::string_view name, std::string_view fallback) const {
  spec(name);
  const std::string* v = find(name);
  if (v == nullptr) return std::string(fallback);
  if (v->empty()) throw InputError(fmt::format("{} expects a non-empty value", name));
  return *v;
}

std::int64_t Args::get_int(std::string_view name, std::int64_t fallback, std::int64_t min,
                           std::int64_t max) const {
  spec(name);
  const std::string* v = find(name);
  if (v == nullptr) return fallback;
  std::int64_t out = 0;
  const char* end = v->data() + v->size();
  const auto [ptr, ec] = std::from_chars(v->data(), end, out);
  if (ec != std::errc() || ptr != end || out < min || out > max) {
    throw InputError(
        fmt::format("{} expects an integer in [{}, {}], got '{}'", name, min, max, *v));
  }
  return out;
}

double Args::get_number(std::string_view name, double fallback, double max) const {
  spec(name);
  const std::string* v = find(name);
  if (v == nullptr) return fallback;
  double out = 0;
  const char* end = v->data() + v->size();
  const auto [ptr, ec] = std::from_chars(v->data(), end, out);
  if (ec != std::errc() || ptr != end || !(out >= 0) || out > max) {
    throw InputError(fmt::format("{} expects a number in [0, {}], got '{}'", name, max, *v));
  }
  return out;
}

std::string Args::get_choice(std::string_view name, std::string_view fallback,
                             std::initializer_list<std::string_view> choices) const {
  const std::string v = get(name, fallback);
  for (auto c : choices) {
    if (c == v) return v;
  }
  throw InputError(fmt::format("{} expects one of {}, got '{}'", name, fmt::join(choices, "|"), v));
}

std::string Args::help_text(std::string_view summary, std::string_view example) const {
  std::string out = fmt::format("usage: meshsim {} [flags]\n\n{}\n\nflags:\n", command_, summary);
  for (const auto& s : specs_) {
    const std::string left = s.value_name.empty() ? s.name : s.name + " " + s.value_name;
    out += fmt::format("  {:<34} {}\n", left, s.help);
  }
  out += fmt::format("  {:<34} {}\n", "--help", "show this help");
  out += fmt::format("\nexample:\n  {}\n", example);
  return out;
}

bool names_flag(std::span<const std::string> argv, std::string_view flag) {
  return std::any_of(argv.begin(), argv.end(), [&](const std::string& a) {
    return a == flag || (a.starts_with(flag) && a.size() > flag.size() && a[flag.size()] == '=');
  });
}

}  // namespace meshsim
