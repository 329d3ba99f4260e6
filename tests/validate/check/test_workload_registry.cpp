#include <doctest/doctest.h>

#include <set>
#include <string>

#include "validate/check/workload_registry.hpp"

using namespace meshsim;

TEST_CASE("the registry has one descriptor per workload configuration, complete and by name") {
  const auto registry = workload_registry();
  // One per alternative of Workload::config (ring attention, TP linear, pipeline).
  REQUIRE(registry.size() == std::variant_size_v<decltype(Workload::config)>);
  std::set<std::size_t> alternatives;
  std::set<std::string> names;
  for (const auto& d : registry) {
    alternatives.insert(d.alternative);
    names.insert(std::string(d.name));
    CHECK(static_cast<bool>(d.build));
    CHECK(static_cast<bool>(d.layout));
    CHECK(static_cast<bool>(d.reference));
    CHECK(static_cast<bool>(d.exchange_dtype));
    CHECK(find_workload(d.name) == &d);
  }
  CHECK(alternatives.size() == registry.size());
  CHECK(names == std::set<std::string>{"ring-attention", "tp-linear", "pipeline"});
  CHECK(find_workload("collective") == nullptr);
}

TEST_CASE("a workload builds its Program and lays out its tensors through its descriptor") {
  RingAttentionConfig ring;
  ring.cp = 4;
  ring.seq = 64;
  CHECK(workload_descriptor(Workload{ring}).name == "ring-attention");
  CHECK(build_program(Workload{ring}).world_size() == 4);
  CHECK(tensor_layout(Workload{ring}).tensor("q") != nullptr);
  CHECK_FALSE(workload_descriptor(Workload{ring}).exchange_dtype(Workload{ring}));
  TpLinearConfig tp;
  tp.tp = 2;
  tp.tokens = 8;
  tp.in_features = 4;
  tp.out_features = 4;
  CHECK(workload_descriptor(Workload{tp}).name == "tp-linear");
  CHECK(build_program(Workload{tp}).world_size() == 2);
  PipelineConfig pp;
  pp.shape.stages = 3;
  pp.shape.microbatches = 3;
  pp.dtype = DType::bf16;
  CHECK(build_program(Workload{pp}).world_size() == 3);
  // x, w, dout inputs; y, dx, dw outputs (validate/tensors/workload_layouts.hpp).
  CHECK(tensor_layout(Workload{pp}).tensors().size() == 6);
  // Stages hand activations and gradients over in the workload's dtype.
  CHECK(workload_descriptor(Workload{pp}).exchange_dtype(Workload{pp}) == DType::bf16);
}
