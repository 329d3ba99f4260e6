#include "sim/time.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

void duration_out_of_range(double seconds, std::string_view what) {
  throw InputError(fmt::format("{} takes {:g} s, outside the simulated range [0, {:g}] s", what,
                               seconds, kMaxDurationSeconds));
}

}  // namespace meshsim
