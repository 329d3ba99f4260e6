#include "tools/published_precision.hpp"

#include <fmt/format.h>

#include "schedules/precision.hpp"
#include "sim/error.hpp"

namespace meshsim {
namespace {

bool has(const std::string& words, std::string_view part) {
  return words.find(part) != std::string::npos;
}

// The linears' recipe the words name; bf16 for words without FP8 / FP4; nullopt for FP8 words
// without a recipe, but torchtitan's "Float8": its only FP8 recipe of 2024 was torchao's tensorwise
// dynamic scaling (torchtitan docs/float8.md: "we currently support tensor-wise scaling with
// dynamic scales"), meshsim's fp8-current.
std::optional<Precision> recipe_of(const std::string& precision, const std::string& source) {
  const std::string w = published_fields::squeezed(precision);
  if (source.starts_with("torchtitan") && has(w, "float8") && !has(w, "rowwise") &&
      !has(w, "mxfp8")) {
    return Precision::fp8_current;
  }
  if (has(w, "mxfp8")) return Precision::mxfp8;
  if (has(w, "nvfp4")) return Precision::nvfp4;
  if (!has(w, "fp8") && !has(w, "float8") && !has(w, "fp4")) return Precision::bf16;
  if (has(w, "fp4")) return std::nullopt;
  if (has(w, "blockwise")) return Precision::fp8_blockwise;
  if (has(w, "fp8cs") || has(w, "current") || has(w, "tensorwise")) return Precision::fp8_current;
  if (has(w, "fp8ds") || has(w, "delayed")) return Precision::fp8_delayed;
  return std::nullopt;
}

}  // namespace

std::optional<SkippedRun> published_software_plan(const PublishedRun& run,
                                                  const HardwareProfile& hardware, StepPlan& plan,
                                                  std::vector<std::string>& notes) {
  std::vector<std::string> reasons;
  if (run.compile) {
    plan.layer_kernels = LayerKernels::torch_compile;
    notes.emplace_back("layer kernels torch-compile (the run used torch.compile)");
  }
  const auto recipe = recipe_of(run.precision, run.source);
  if (!recipe) {
    reasons.push_back(
        fmt::format("precision '{}' names FP8 / FP4 linears but not the recipe (delayed, current / "
                    "tensorwise, blockwise, MXFP8, NVFP4)",
                    run.precision));
  } else if (*recipe != Precision::bf16) {
    try {
      check_precision_hardware(*recipe, hardware, "precision");
      plan.precision = *recipe;
      notes.push_back(
          fmt::format("linears in {} (precision '{}')", to_string(*recipe), run.precision));
    } catch (const InputError& e) {
      reasons.emplace_back(e.what());
    }
  }
  if (reasons.empty()) return std::nullopt;
  std::string why = reasons.front();
  for (std::size_t i = 1; i < reasons.size(); ++i) why += "; " + reasons[i];
  return SkippedRun{why};
}

}  // namespace meshsim
