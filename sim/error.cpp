#include "sim/error.hpp"

#include <fmt/format.h>

namespace meshsim {

void invariant_failed(const char* expr, const char* file, int line, const std::string& what) {
  throw InvariantError(fmt::format("internal error at {}:{}: {} ({})", file, line, what, expr));
}

}  // namespace meshsim
