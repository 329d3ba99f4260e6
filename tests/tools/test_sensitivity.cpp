#include <doctest/doctest.h>

#include <string>

#include "schedules/model_catalog.hpp"
#include "tools/sensitivity.hpp"

using namespace meshsim;

namespace {

// llama3-8b on one node of 8 H100s, tp 8 (folded: one rank built), seq 2048, gbs 8.
StepPlan plan8() {
  StepPlan p;
  p.tp = 8;
  p.seq = 2048;
  p.global_batch = 8;
  return p;
}

const SensitivityInput& input(const Sensitivity& s, std::string_view name) {
  for (const auto& in : s.inputs) {
    if (in.name == name) return in;
  }
  const std::string missing = "no input " + std::string(name);
  FAIL(missing);
  return s.inputs.front();
}

}  // namespace

TEST_CASE("sensitivity: each input moved both ways, ranked by the larger change") {
  const TransformerModel m = *builtin_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm");
  const Sensitivity s = step_sensitivity(m, plan8(), hw, {}, 0.1);
  CHECK(s.baseline_s == simulated_step_time(m, plan8(), hw, {}));
  for (std::size_t i = 1; i < s.inputs.size(); ++i) {
    CHECK(s.inputs[i - 1].largest_change() >= s.inputs[i].largest_change());
  }
  // The bf16 peak: 10 % less makes the step slower, by at most 1 / 0.9 - 1 = 11.1 % (only the
  // compute time scales, by 1 / 0.9 at most); 10 % more faster, by at most 1 - 1 / 1.1 = 9.1 %.
  const SensitivityInput& bf16 = input(s, "peak_tflops.bf16");
  REQUIRE(bf16.minus.valid);
  REQUIRE(bf16.plus.valid);
  CHECK(bf16.minus.change > 0);
  CHECK(bf16.minus.change <= 1 / 0.9 - 1 + 1e-9);
  CHECK(bf16.plus.change < 0);
  CHECK(bf16.plus.change >= 1 / 1.1 - 1 - 1e-9);
  CHECK(bf16.minus.value == "890.1");  // 989 x 0.9
  // A bf16 step runs no fp64 kernel: the fp64 peak moves nothing.
  const SensitivityInput& fp64 = input(s, "peak_tflops.fp64");
  CHECK(fp64.minus.change == 0);
  CHECK(fp64.plus.change == 0);
  // Integers are counts and stay: gpus_per_node is not an input.
  for (const auto& in : s.inputs) CHECK(in.name != "gpus_per_node");
  // An efficiency table moves as a whole.
  CHECK(input(s, "compute_efficiency.gemm").minus.value == "x0.9");
  // Plan knobs, rounded to what the plan allows: seq to a multiple of tp 8 under sequence
  // parallelism (2048 x 0.9 = 1843.2 -> 1840, x 1.1 = 2252.8 -> 2256), gbs to a multiple of
  // dp x mbs = 1 (8 x 0.9 = 7.2 -> 7, 8.8 -> 9); a longer step with more sequences.
  const SensitivityInput& seq = input(s, "seq");
  CHECK(seq.minus.value == "1840");
  CHECK(seq.plus.value == "2256");
  const SensitivityInput& gbs = input(s, "gbs");
  CHECK(gbs.minus.value == "7");
  CHECK(gbs.plus.value == "9");
  CHECK(gbs.plus.change > 0);
  const auto j = to_json(s);
  CHECK(j["inputs"].size() == s.inputs.size());
  CHECK(j["baseline_step_time_s"] == s.baseline_s);
}
