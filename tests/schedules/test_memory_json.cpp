#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "schedules/memory_model.hpp"
#include "schedules/model_catalog.hpp"
#include "sim/hardware_profile.hpp"
#include "tests/schedules/memory_test_models.hpp"

using namespace meshsim;

TEST_CASE("memory json: the verdict, each stage's total, and optional parts only when present") {
  // llama3-70b unsharded on one GPU: 18 bytes x 70.55e9 parameters alone exceed 80 GB (OOM).
  const TransformerModel m = *builtin_model("llama3-70b");
  MemoryPlan single;
  single.seq = 8192;
  const MemoryEstimate one = estimate_memory(m, single, load_hardware("h100-sxm"));
  const nlohmann::json j = to_json(one);
  CHECK(j["oom"] == true);
  CHECK(j["stages"].size() == 1);
  CHECK(j["stages"][0]["total"].get<double>() == one.peak_bytes);
  CHECK(j["stages"][0]["weights"].get<double>() == one.stages[0].weights);
  // bf16, no ZeRO-3, no MoE: no quantized copies, unsharded buffers or MoE fields.
  const std::string text = j.dump();
  CHECK(text.find("quantized_weights") == std::string::npos);
  CHECK(text.find("unsharded") == std::string::npos);
  CHECK(text.find("expert_parameters") == std::string::npos);
  // FSDP adds the unsharded buffers.
  single.dp = 8;
  single.sharding.zero = 3;
  single.sharding.fsdp = true;
  const MemoryEstimate fsdp = estimate_memory(m, single, test::with_memory(1e12));
  CHECK(to_json(fsdp)["stages"][0]["unsharded"].get<double>() == fsdp.stages[0].unsharded);
  CHECK(fsdp.stages[0].unsharded > 0);
}
