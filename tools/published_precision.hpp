#pragma once
// The software settings of a published run that change its kernels (data/published/README.md:
// `compile`, `precision`), by these rules (tools/published_runs.hpp holds the others):
//   compile    true: skipped. meshsim has no model of torch.compile: Inductor fuses the
//              non-GEMM operators (norms, activations, RoPE, casts) into generated kernels whose
//              time and memory meshsim does not estimate, and a guess would be a fit. false or
//              null: eager PyTorch (the operators as meshsim times them).
//   precision  words naming FP8 or FP4 linears map to `meshsim step --precision` only when they
//              name the recipe exactly: "mxfp8" -> mxfp8, "nvfp4" -> nvfp4, "blockwise" ->
//              fp8-blockwise, "FP8-CS" / "current" / "tensorwise" (Transformer Engine's
//              Float8CurrentScaling, torchao's tensorwise dynamic scaling) -> fp8-current,
//              "FP8-DS" / "delayed" -> fp8-delayed; FP8 words without a recipe ("FP8",
//              "Float8") are skipped, as is a recipe the profile has no tensor cores for. Other
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
