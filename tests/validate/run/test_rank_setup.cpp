#include <doctest/doctest.h>

#include "schedules/ring_attention.hpp"
#include "sim/comm_plan.hpp"
#include "validate/run/rank_setup.hpp"
#include "validate/tensors/workload_layouts.hpp"

using namespace meshsim;

TEST_CASE("a rank's setup: its schedule, slots, scratch and filled inputs") {
  RingAttentionConfig c;
  c.cp = 2;
  c.seq = 16;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 4;
  const Program p = build_ring_attention(c);
  const CommPlan plan = validate_program(p);
  const RankSetup s(p, plan, 1, ring_attention_layout(c), 1);
  std::int64_t ops = 0, bytes = 0;
  for (const auto& op : p.ops) ops += op.rank == 1 ? 1 : 0;
  for (const auto& slot : p.slots) bytes += slot.rank == 1 ? TensorStore::slot_bytes(slot) : 0;
  CHECK(s.schedule.size() == ops);
  CHECK(s.store.total_slot_bytes() == bytes);
  CHECK(s.store.total_scratch_bytes() == 0);  // every transfer of ring attention has a slot
  CHECK(s.memory_bytes() == bytes);
  CHECK(s.fill.from_layout == 3);
}
