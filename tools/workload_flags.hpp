#pragma once
// The workload flags the simulating sub-commands and `meshsim validate` share (one definition, so
// `validate X` takes exactly the flags of `X`): their specs for --help and their parsing into the
// builders' configurations. Validation also accepts fp64 (the float64 runs of the numerics
// checks); the pipeline's explicit-time flags are accepted there but only the simulator uses them.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/pipeline.hpp"
#include "schedules/ring_attention.hpp"
#include "schedules/tp_linear.hpp"
#include "tools/cli_args.hpp"
#include "validate/tensors/workload.hpp"

namespace meshsim {

enum class FlagUse { simulate, validate };

std::vector<OptionSpec> ring_attention_flags(FlagUse use);
RingAttentionConfig parse_ring_attention_flags(const Args& args, int gpus_per_node, FlagUse use);

std::vector<OptionSpec> tp_linear_flags(FlagUse use);
TpLinearConfig parse_tp_linear_flags(const Args& args, int gpus_per_node, FlagUse use);

std::vector<OptionSpec> pipeline_flags(FlagUse use);
PipelineConfig parse_pipeline_flags(const Args& args, int gpus_per_node, FlagUse use);

// The command line of each workload of the registry (validate/check/workload_registry), under the
// same name: its flags, their parsing, the flag that sets its ranks, and the examples of --help.
struct WorkloadFlags {
  std::string_view name;
  std::vector<OptionSpec> (*specs)(FlagUse) = nullptr;
  Workload (*parse)(const Args&, int gpus_per_node, FlagUse) = nullptr;
  std::string (*ranks)(const Workload&) = nullptr;  // with its value: "--cp 4"
  const char* simulate_help = "";
  const char* simulate_example = "";
  const char* validate_example = "";
};

std::span<const WorkloadFlags> workload_flag_tables();
// The table of the workload called `name` (InvariantError when the registry has no such name).
const WorkloadFlags& workload_flags(std::string_view name);

}  // namespace meshsim
