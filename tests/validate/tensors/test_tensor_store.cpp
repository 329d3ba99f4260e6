#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>

#include "sim/error.hpp"
#include "sim/program.hpp"
#include "validate/tensors/tensor_store.hpp"

using namespace meshsim;

namespace {

Program two_rank_slots() {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "slots");
  b.stream("compute");
  b.stream("comm");
  b.slot(0, "a", DType::bf16, {3, 5});   // 30 bytes
  b.slot(1, "b", DType::fp32, {7});      // 28 bytes
  b.slot(0, "c", DType::fp64, {2, 2});   // 32 bytes
  b.slot(0, "empty", DType::fp32, {0});  // 0 bytes
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("a rank's slots are allocated with shape x dtype bytes, zeroed and aligned") {
  const Program p = two_rank_slots();
  TensorStore s(p, 0, {0, 100});
  CHECK(TensorStore::slot_bytes(p.slots[0]) == 30);  // 3 x 5 x 2
  CHECK(TensorStore::slot_bytes(p.slots[2]) == 32);  // 2 x 2 x 8
  CHECK(s.total_slot_bytes() == 62);
  CHECK(s.total_scratch_bytes() == 100);
  CHECK(s.holds(0));
  CHECK_FALSE(s.holds(1));  // rank 1's
  CHECK_FALSE(s.holds(-1));
  const auto a = s.bytes(0);
  CHECK(a.size() == 30);
  CHECK(std::all_of(a.begin(), a.end(), [](std::byte x) { return x == std::byte{0}; }));
  CHECK(reinterpret_cast<std::uintptr_t>(a.data()) % 64 == 0);
  CHECK(s.bytes(3).empty());
  CHECK(s.scratch(0).empty());
  CHECK(s.scratch(1).size() == 100);
  CHECK_THROWS_AS(s.bytes(1), InvariantError);
  TensorStore other(p, 1);
  CHECK(other.total_slot_bytes() == 28);  // 7 x 4
}
