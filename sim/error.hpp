#pragma once
// The two tiers of errors (design §7): InputError carries a one-line message for bad user input
// (flags, JSON files, impossible configurations); MESHSIM_CHECK guards internal invariants and
// stays on in release builds.
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

// Bad input unless value > 0: "<flag> must be a positive integer, got <value>".
void require_positive(long long value, std::string_view flag);

[[noreturn]] void invariant_failed(const char* expr, const char* file, int line,
                                   const std::string& what);

}  // namespace meshsim

#define MESHSIM_CHECK(cond, what)                                              \
  do {                                                                         \
    if (!(cond)) ::meshsim::invariant_failed(#cond, __FILE__, __LINE__, what); \
  } while (false)
