#pragma once
// The two tiers of errors (ARCHITECTURE.md §7): InputError carries a one-line message for bad user
// input (flags, JSON files, impossible configurations); MESHSIM_CHECK guards internal invariants
// and stays on in release builds.
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace meshsim {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Library messages name configuration fields between backquotes (`seq`, `kv_heads`, `mbs`), in the
// configuration's own words; each front end renders them in its words (the CLI as its flags,
// tools/field_flags; a sweep as plain names). render_fields replaces every `name` with
// name_of(name).
std::string render_fields(std::string_view message,
                          const std::function<std::string(std::string_view)>& name_of);

// Bad input unless value > 0: "`field` must be a positive integer, got <value>".
void require_positive(long long value, std::string_view field);

[[noreturn]] void invariant_failed(const char* expr, const char* file, int line,
                                   const std::string& what);

}  // namespace meshsim

#define MESHSIM_CHECK(cond, what)                                              \
  do {                                                                         \
    if (!(cond)) ::meshsim::invariant_failed(#cond, __FILE__, __LINE__, what); \
  } while (false)
