#pragma once
// The plan `meshsim step`'s flags describe, for the commands that take the same flags (explain).
#include <iosfwd>
#include <string>
#include <vector>

#include "schedules/model_catalog.hpp"
#include "schedules/training_step.hpp"
#include "tools/cli_args.hpp"
#include "tools/simulate_outputs.hpp"

namespace meshsim {

struct StepRequest {
  TransformerModel model;
  StepPlan plan;
  std::string
      note;  // why the plan differs from the flags (a flow-level run that cannot fold unfolds)
};

// meshsim step's flags (with --hardware, --network, --trace, --json).
std::vector<OptionSpec> step_flag_options();
// The plan of the flags, checked, defaults filled; a Hugging Face config's ignored fields on err.
StepRequest read_step_request(const Args& args, const OutputRequest& out, std::ostream& err);

}  // namespace meshsim
