#pragma once
// The workload flags the simulating sub-commands and `meshsim validate` share (one definition, so
// `validate X` takes exactly the flags of `X`): their specs for --help and their parsing into the
// builders' configurations. Validation also accepts fp64 (the float64 runs of the numerics
// checks); the pipeline's explicit-time flags are accepted there but only the simulator uses them.
#include <vector>

#include "schedules/pipeline.hpp"
#include "schedules/ring_attention.hpp"
#include "schedules/tp_linear.hpp"
#include "tools/cli_args.hpp"

namespace meshsim {

enum class FlagUse { simulate, validate };

std::vector<OptionSpec> ring_attention_flags(FlagUse use);
RingAttentionConfig parse_ring_attention_flags(const Args& args, int gpus_per_node, FlagUse use);

std::vector<OptionSpec> tp_linear_flags(FlagUse use);
TpLinearConfig parse_tp_linear_flags(const Args& args, int gpus_per_node, FlagUse use);

std::vector<OptionSpec> pipeline_flags(FlagUse use);
PipelineConfig parse_pipeline_flags(const Args& args, int gpus_per_node, FlagUse use);

}  // namespace meshsim
