#include "sim/error.hpp"

#include <fmt/format.h>

namespace meshsim {

void require_positive(long long value, std::string_view flag) {
  if (value <= 0)
    throw InputError(fmt::format("{} must be a positive integer, got {}", flag, value));
}

void invariant_failed(const char* expr, const char* file, int line, const std::string& what) {
  throw InvariantError(fmt::format("internal error at {}:{}: {} ({})", file, line, what, expr));
}

}  // namespace meshsim
