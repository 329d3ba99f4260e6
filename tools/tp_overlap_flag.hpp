#pragma once
// The --tp-comm-overlap flag `meshsim step`, `explain` and `sweep` share: Transformer Engine's
// userbuffers TP communication overlap (StepPlan::tp_comm_overlap; schedules/tp_emitter_overlap).
#include "schedules/step_plan.hpp"
#include "sim/hardware_profile.hpp"
#include "tools/cli_args.hpp"

namespace meshsim {

OptionSpec tp_comm_overlap_option();
OptionSpec tp_overlap_rs_option();

// Switches plan.tp_comm_overlap on with the GPU's SM count (the profile's sm_count); InputError
// naming the flag when the profile does not give it.
void enable_tp_comm_overlap(const HardwareProfile& hardware, StepPlan& plan);

// --tp-comm-overlap present: enable_tp_comm_overlap; absent: the plan unchanged. Then
// --tp-comm-overlap-rs (InputError without --tp-comm-overlap).
void read_tp_comm_overlap(const Args& args, const HardwareProfile& hardware, StepPlan& plan);

}  // namespace meshsim
