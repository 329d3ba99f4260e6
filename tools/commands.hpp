#pragma once
// The sub-commands of the meshsim CLI. Each parses its flags, does its work and returns the exit
// code; bad input surfaces as InputError (exit code 2 in main).
#include <iosfwd>
#include <span>
#include <string>

namespace meshsim {

struct CommandContext {
  std::string command_line;  // for provenance
  std::ostream& out;
  std::ostream& err;
};

int run_ring_attention_command(std::span<const std::string> args, const CommandContext& ctx);
int run_pipeline_command(std::span<const std::string> args, const CommandContext& ctx);
int run_step_command(std::span<const std::string> args, const CommandContext& ctx);
int run_explain_command(std::span<const std::string> args, const CommandContext& ctx);
int run_tp_linear_command(std::span<const std::string> args, const CommandContext& ctx);
int run_hardware_command(std::span<const std::string> args, const CommandContext& ctx);
int run_model_command(std::span<const std::string> args, const CommandContext& ctx);
int run_compare_command(std::span<const std::string> args, const CommandContext& ctx);
// compare --kineto FILE <step flags> (tools/cmd_compare_kineto.cpp): a profiled step beside its
// simulation.
int run_compare_kineto(std::span<const std::string> args, const CommandContext& ctx);
int run_collective_command(std::span<const std::string> args, const CommandContext& ctx);
int run_export_command(std::span<const std::string> args, const CommandContext& ctx);
int run_simulate_command(std::span<const std::string> args, const CommandContext& ctx);
int run_sweep_command(std::span<const std::string> args, const CommandContext& ctx);
int run_calibrate_command(std::span<const std::string> args, const CommandContext& ctx);
// calibrate --from-trace FILE (tools/cmd_calibrate_trace.cpp): a fit to a profiler trace.
int run_calibrate_from_trace(std::span<const std::string> args, const CommandContext& ctx);
int run_validate_suite_command(std::span<const std::string> args, const CommandContext& ctx);
int run_validate_command(std::span<const std::string> args, const CommandContext& ctx);
// validate moe (tools/cmd_validate_moe.cpp): one MoE layer with data-dependent dispatch.
int run_validate_moe_command(std::span<const std::string> args, const CommandContext& ctx);
int run_report_command(std::span<const std::string> args, const CommandContext& ctx);

}  // namespace meshsim
