#pragma once
// The --cross-entropy flag `meshsim step` and `meshsim sweep` share (schedules/cross_entropy.hpp).
#include <optional>

#include "schedules/step_plan.hpp"
#include "tools/cli_args.hpp"

namespace meshsim {

OptionSpec cross_entropy_option();

// The loss --cross-entropy names (nullopt when absent); InputError naming the flag and the choices
// for anything else.
std::optional<CrossEntropy> given_cross_entropy(const Args& args);
// Sets plan.cross_entropy from --cross-entropy, or when absent default_cross_entropy of the plan's
// recompute (set it first).
void read_cross_entropy(const Args& args, StepPlan& plan);

}  // namespace meshsim
