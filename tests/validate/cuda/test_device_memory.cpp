#include <doctest/doctest.h>

#include <cstdint>

#include "sim/error.hpp"
#include "sim/program.hpp"
#include "validate/cuda/device_memory.hpp"
#include "validate/tensors/tensor_store.hpp"

using namespace meshsim;

namespace {

Program slots_program() {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "slots");
  b.stream("compute");
  b.stream("comm");
  b.slot(0, "a", DType::bf16, {3, 5});   // 30 bytes
  b.slot(1, "b", DType::fp32, {7});      // rank 1's
  b.slot(0, "c", DType::fp64, {40, 2});  // 640 bytes
  b.slot(0, "empty", DType::fp32, {0});  // no buffer
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("device memory: one allocation sized by the rank's slots and scratch, 256-aligned") {
  const Program p = slots_program();
  TensorStore store(p, 0, {0, 100});
  const DeviceMemoryPlan plan(p, store);
  REQUIRE(plan.regions().size() == 3);  // a, c, scratch of stream 1 (empty buffers have none)
  CHECK(plan.regions()[0].host == store.bytes(0).data());
  CHECK(plan.regions()[0].offset == 0);
  CHECK(plan.regions()[0].bytes == 30);
  CHECK(plan.regions()[1].offset == 256);  // 30 rounded up to 256
  CHECK(plan.regions()[1].bytes == 640);
  CHECK(plan.regions()[2].offset == 1024);  // 256 + 640 = 896, rounded up to 1024
  CHECK(plan.regions()[2].host == store.scratch(1).data());
  CHECK(plan.total_bytes() == 1280);  // 1024 + 100, rounded up
}

TEST_CASE("device memory: host addresses inside a buffer map to the same place on the device") {
  const Program p = slots_program();
  TensorStore store(p, 0, {0, 100});
  const DeviceMemoryPlan plan(p, store);
  CHECK(plan.offset_of(store.bytes(0).data()) == 0);
  CHECK(plan.offset_of(store.bytes(0).data() + 7) == 7);
  CHECK(plan.offset_of(store.bytes(2).data() + 100) == 256 + 100);
  // One past the end (a zero-count slice at the end of a buffer) still maps.
  CHECK(plan.offset_of(store.bytes(2).data() + 640) == 256 + 640);
  CHECK(plan.offset_of(store.scratch(1).data() + 99) == 1024 + 99);
  CHECK(plan.offset_of(nullptr) == -1);
  int unrelated = 0;
  CHECK_THROWS_AS(plan.offset_of(&unrelated), InvariantError);
}
