#include <doctest/doctest.h>

#include "schedules/ring_attention.hpp"
#include "sim/error.hpp"
#include "validate/cpu/cpu_kernel_runner.hpp"
#include "validate/run/slot_views.hpp"

using namespace meshsim;

namespace {

SlotId slot_named(const Program& p, int rank, const std::string& name) {
  for (const auto& s : p.slots) {
    if (s.rank == rank && s.name == name) return s.id;
  }
  FAIL("no slot " << name);
  return -1;
}

}  // namespace

TEST_CASE("slot views: token layouts of local and all-gathered K/V slots") {
  RingAttentionConfig c;
  c.cp = 4;
  c.seq = 32;  // zigzag: eight chunks of 4 tokens; rank r holds chunks r and 7 - r
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 4;
  c.kv_rotation = KvRotation::all_gather;
  const Program p = build_ring_attention(c);
  TensorStore store(p, 1);
  const SlotViews v(store);
  const SlotId q = slot_named(p, 1, "q");
  CHECK(v.token_layout(q) == std::vector<kernels::PositionRange>{{4, 8}, {24, 28}});
  CHECK(v.heads(q, 2).tokens == 8);
  CHECK_THROWS_AS(v.heads(q, 4), InvariantError);  // not 4 heads
  const SlotId all = slot_named(p, 1, "kv_all_fwd");
  CHECK(v.kv_parts(all) == 4);
  // Part s holds rank s's chunks s and 7 - s.
  CHECK(v.token_layout(all, 3) == std::vector<kernels::PositionRange>{{12, 16}, {16, 20}});
  CHECK(v.part_holding(all, {TokenRange{0, 4}}) == 0);
  CHECK(v.part_holding(all, {TokenRange{20, 24}}) == 2);
  CHECK_THROWS_AS(v.part_holding(all, {TokenRange{0, 8}}), InvariantError);  // spans two parts
  // Part 2's K view starts 2 parts x [2, batch 1, 8 tokens, 1 head, 4] = 128 elements in.
  const kernels::KvViews kv2 = v.kv(all, 2);
  CHECK(static_cast<char*>(kv2.k.data) - static_cast<char*>(v.kv(all, 0).k.data) ==
        2 * 2 * 8 * 4 * 2);  // elements x 2 bytes (bf16)
  CHECK(v.lse(slot_named(p, 1, "lse")).tokens == 8);
}

TEST_CASE("injected fault names round trip") {
  for (auto f : {InjectedFault::none, InjectedFault::attention_mask, InjectedFault::lse_merge,
                 InjectedFault::gemm_scale}) {
    CHECK(parse_injected_fault(to_string(f)) == f);
  }
  CHECK_FALSE(parse_injected_fault("bitflip").has_value());
}
