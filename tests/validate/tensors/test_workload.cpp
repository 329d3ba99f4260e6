#include <doctest/doctest.h>

#include "validate/tensors/workload.hpp"

using namespace meshsim;

TEST_CASE("a workload builds its Program and lays out its tensors") {
  RingAttentionConfig ring;
  ring.cp = 4;
  ring.seq = 64;
  CHECK(build_program(Workload{ring}).world_size() == 4);
  CHECK(tensor_layout(Workload{ring}).tensor("q") != nullptr);
  TpLinearConfig tp;
  tp.tp = 2;
  tp.tokens = 8;
  tp.in_features = 4;
  tp.out_features = 4;
  CHECK(build_program(Workload{tp}).world_size() == 2);
  PipelineConfig pp;
  pp.shape.stages = 3;
  pp.shape.microbatches = 3;
  CHECK(build_program(Workload{pp}).world_size() == 3);
  // x, w, dout inputs; y, dx, dw outputs (validate/tensors/workload_layouts.hpp).
  CHECK(tensor_layout(Workload{pp}).tensors().size() == 6);
}
