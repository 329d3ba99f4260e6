#pragma once
// --moe-capacity-factor, as meshsim step and validate moe read it (defined in tools/moe_flags.cpp;
// a header of its own so that validate moe does not include the step plan).
#include "tools/cli_args.hpp"

namespace meshsim {

// --moe-capacity-factor F in (0, 1e6]; 0 when absent (no capacity). InputError naming the flag.
double read_capacity_factor(const Args& args);

}  // namespace meshsim
