#pragma once
// Flags and output handling shared by every simulating sub-command: --hardware, --trace, --json.
#include <chrono>
#include <string>
#include <vector>

#include "sim/hardware_profile.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/simulation.hpp"

namespace meshsim {

std::vector<OptionSpec> simulate_output_options();

// --host-op-us: the host issue clock's time per op (sweep shares it).
OptionSpec host_op_option();
// The profile --hardware names (`fallback` when absent) with --attention-kernel and --host-op-us
// applied.
HardwareProfile hardware_from_flags(const Args& args, std::string_view fallback);

struct OutputRequest {
  HardwareProfile hardware;
  Provenance provenance;
  std::string trace_path;  // empty: no trace
  NetworkChoice network;
  bool json = false;
};
OutputRequest read_output_request(const Args& args, const CommandContext& ctx);

// Simulates `program` as the request asks (recording a trace when it names one), after staging
// the Program itself as `save_path` when that is not empty (--save-program).
TracedSimulation simulate_requested(Program program, const OutputRequest& request,
                                    const std::string& save_path,
                                    std::chrono::steady_clock::time_point started,
                                    OutputFiles& files);

// Stages the trace, commits every staged output file together, prints the report; returns the
// exit code.
int emit_outputs(const TracedSimulation& result, const OutputRequest& request,
                 const CommandContext& ctx, OutputFiles& files);

}  // namespace meshsim
