// A published run's `compile` and FP8 precision words (tools/published_precision.hpp), on the
// test-only rows of tests/tools/data/fsdp_runs.json (measured values invented for the test).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <variant>

#include "schedules/cross_entropy.hpp"
#include "schedules/precision.hpp"
#include "sim/error.hpp"
#include "tests/tools/published_test_rows.hpp"
#include "tools/published_runs.hpp"

using namespace meshsim;
using json = nlohmann::json;

namespace {

json row(const char* id) {
  return test::row_of("fsdp_runs.json", id);
}

std::variant<RunPlan, SkippedRun> plan(const json& r) {
  return plan_run(test::read_one(r, "runs.json"));
}

std::string skipped(const json& r) {
  const auto p = plan(r);
  REQUIRE(std::holds_alternative<SkippedRun>(p));
  return std::get<SkippedRun>(p).reason;
}

Precision precision_of(const json& r) {
  const auto p = plan(r);
  REQUIRE(std::holds_alternative<RunPlan>(p));
  return std::get<RunPlan>(p).plan.precision;
}

LayerKernels kernels_of(const json& r) {
  const auto p = plan(r);
  REQUIRE(std::holds_alternative<RunPlan>(p));
  return std::get<RunPlan>(p).plan.layer_kernels;
}

}  // namespace

TEST_CASE("published precision: a run with torch.compile runs Inductor's fused layer kernels") {
  const auto p = plan(row("fsdp-test-004"));
  REQUIRE(std::holds_alternative<RunPlan>(p));
  const RunPlan& run = std::get<RunPlan>(p);
  CHECK(run.plan.layer_kernels == LayerKernels::torch_compile);
  CHECK(std::find(run.conventions.begin(), run.conventions.end(),
                  "layer kernels torch-compile (the run used torch.compile)") !=
        run.conventions.end());
  // Float8 without its scaling recipe is still skipped, compiled or not.
  CHECK(skipped(row("fsdp-test-005")) ==
        "precision 'BF16 + Float8 linears' names FP8 / FP4 linears but not the recipe (delayed, "
        "current / tensorwise, blockwise, MXFP8, NVFP4)");
  json r = row("fsdp-test-004");
  r["compile"] = false;
  CHECK(precision_of(r) == Precision::bf16);
  CHECK(kernels_of(r) == LayerKernels::fused);  // not a torchtitan source: Megatron-style
  r["compile"] = nullptr;
  CHECK(precision_of(r) == Precision::bf16);
  r["compile"] = "yes";
  CHECK_THROWS_WITH_AS(read_published_runs(json{{"rows", json::array({r})}}, "runs.json"),
                       "runs.json: row fsdp-test-004: field 'compile': expected true or false",
                       InputError);
}

TEST_CASE("published precision: FP8 words map to a recipe only where they name it") {
  CHECK(precision_of(row("fsdp-test-006")) == Precision::fp8_current);  // "FP8-CS"
  json r = row("fsdp-test-006");
  for (const auto& [words, recipe] :
       {std::pair{"FP8 delayed scaling", Precision::fp8_delayed},
        std::pair{"Float8 (tensorwise)", Precision::fp8_current},
        std::pair{"fp8-current", Precision::fp8_current},
        std::pair{"FP8 blockwise", Precision::fp8_blockwise}, std::pair{"MXFP8", Precision::mxfp8},
        std::pair{"bf16", Precision::bf16}, std::pair{"fp16 mixed", Precision::bf16}}) {
    const std::string text = words;
    CAPTURE(text);
    r["precision"] = words;
    CHECK(precision_of(r) == recipe);
  }
  r["precision"] = "FP8";
  CHECK(skipped(r).starts_with("precision 'FP8' names FP8 / FP4 linears but not the recipe"));
  // torchtitan's "Float8" is its one 2024 recipe, tensorwise dynamic scaling (docs/float8.md);
  // its rows also run its eager model code and loss.
  json titan = row("fsdp-test-005");
  titan["compile"] = false;
  titan["source"]["id"] = "torchtitan_h100_2024";
  CHECK(precision_of(titan) == Precision::fp8_current);
  CHECK(kernels_of(titan) == LayerKernels::torch_eager);
  CHECK(std::get<RunPlan>(plan(titan)).plan.cross_entropy == CrossEntropy::torch_fp32);
  titan["compile"] = true;
  CHECK(kernels_of(titan) == LayerKernels::torch_compile);
  // fms-fsdp's LLaMA is eager PyTorch too (fms/modules/layernorm.py, feedforward.py); its loss
  // stays the default one (no fp32 upcast); compiled rows keep torch-compile.
  json fms = row("fsdp-test-001");
  fms["source"]["id"] = "fms_fsdp_readme_eager";
  fms["compile"] = false;
  CHECK(kernels_of(fms) == LayerKernels::torch_eager);
  CHECK(std::get<RunPlan>(plan(fms)).plan.cross_entropy == CrossEntropy::vocab_parallel);
  fms["compile"] = true;
  CHECK(kernels_of(fms) == LayerKernels::torch_compile);
  // A recipe the GPU has no tensor cores for (A100: no FP8).
  r["precision"] = "FP8-CS";
  r["cluster"]["gpu"] = "A100-SXM4-80GB";
  CHECK(skipped(r).find("has no FP8 tensor cores") != std::string::npos);
}
