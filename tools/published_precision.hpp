#pragma once
// The software settings of a published run that change its kernels (data/published/README.md:
// `compile`, `precision`), by these rules (tools/published_runs.hpp holds the others):
//   compile    true: `--layer-kernels torch-compile` (schedules/layer_kernels.hpp: Inductor's one
//              fused kernel per chain of point-wise operators). false or null: the source's
//              own stack (tools/published_runs.cpp: torchtitan's rows torch-eager, others fused).
//   precision  words naming FP8 or FP4 linears map to `meshsim step --precision` only when they
//              name the recipe exactly: "mxfp8" -> mxfp8, "nvfp4" -> nvfp4, "blockwise" ->
//              fp8-blockwise, "FP8-CS" / "current" / "tensorwise" (Transformer Engine's
//              Float8CurrentScaling, torchao's tensorwise dynamic scaling) -> fp8-current,
//              "FP8-DS" / "delayed" -> fp8-delayed; "Float8" in a torchtitan row -> fp8-current
//              (torchtitan's only FP8 recipe of 2024, torchao's tensorwise dynamic scaling, per
//              its docs/float8.md); other FP8 words without a recipe ("FP8", "Float8") are
//              skipped, as is a recipe the profile has no tensor cores for. Other
//              words: bf16 linears (the dtype rule of tools/published_runs.hpp).
// A row with several such reasons is skipped with all of them.
#include <optional>
#include <string>
#include <vector>

#include "schedules/step_plan.hpp"
#include "sim/hardware_profile.hpp"
#include "tools/published_runs.hpp"

namespace meshsim {

// Sets plan.precision by the rules above, or the reason(s) to skip. Notes list the mapping.
std::optional<SkippedRun> published_software_plan(const PublishedRun& run,
                                                  const HardwareProfile& hardware, StepPlan& plan,
                                                  std::vector<std::string>& notes);

}  // namespace meshsim
