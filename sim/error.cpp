#include "sim/error.hpp"

#include <fmt/format.h>

namespace meshsim {

void require_positive(long long value, std::string_view field) {
  if (value <= 0)
    throw InputError(fmt::format("`{}` must be a positive integer, got {}", field, value));
}

std::string render_fields(std::string_view message,
                          const std::function<std::string(std::string_view)>& name_of) {
  std::string out;
  out.reserve(message.size());
  for (std::size_t i = 0; i < message.size();) {
    const std::size_t open = message.find('`', i);
    const std::size_t close = open == std::string_view::npos ? open : message.find('`', open + 1);
    if (close == std::string_view::npos) {
      out.append(message.substr(i));
      break;
    }
    out.append(message.substr(i, open - i));
    out.append(name_of(message.substr(open + 1, close - open - 1)));
    i = close + 1;
  }
  return out;
}

void invariant_failed(const char* expr, const char* file, int line, const std::string& what) {
  throw InvariantError(fmt::format("internal error at {}:{}: {} ({})", file, line, what, expr));
}

}  // namespace meshsim
