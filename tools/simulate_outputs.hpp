#pragma once
// Flags and output handling shared by every simulating sub-command: --hardware, --trace, --json.
#include <string>
#include <vector>

#include "sim/hardware_profile.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/simulation.hpp"

namespace meshsim {

std::vector<OptionSpec> simulate_output_options();

struct OutputRequest {
  HardwareProfile hardware;
  Provenance provenance;
  std::string trace_path;  // empty: no trace
  NetworkChoice network;
  bool json = false;
};
OutputRequest read_output_request(const Args& args, const CommandContext& ctx);

// Stages the trace, commits every staged output file together, prints the report; returns the
// exit code.
int emit_outputs(const TracedSimulation& result, const OutputRequest& request,
                 const CommandContext& ctx, OutputFiles& files);

}  // namespace meshsim
