#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "schedules/ring_attention.hpp"
#include "schedules/tp_linear.hpp"
#include "sim/program.hpp"
#include "validate/tensors/input_fill.hpp"
#include "validate/tensors/value_generator.hpp"
#include "validate/tensors/workload_layouts.hpp"

using namespace meshsim;

namespace {

RingAttentionConfig small_ring(int cp, RingVariant v) {
  RingAttentionConfig c;
  c.cp = cp;
  c.seq = 16;
  c.batch = 1;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 2;
  c.variant = v;
  c.dtype = DType::fp32;
  return c;
}

SlotId slot_named(const Program& p, int rank, const std::string& name) {
  for (const auto& s : p.slots) {
    if (s.rank == rank && s.name == name) return s.id;
  }
  FAIL("no slot ", name, " on rank ", rank);
  return -1;
}

}  // namespace

TEST_CASE("read-only slots: read by some op, written by none") {
  ProgramBuilder b(Mesh({{"cp", 1}}, 8), true, "fill");
  const StreamId s = b.stream("compute");
  const SlotId in = b.slot(0, "in", DType::fp32, {4});
  const SlotId acc = b.slot(0, "acc", DType::fp32, {4});
  const SlotId unused = b.slot(0, "unused", DType::fp32, {4});
  b.add(0, s, "acc += in", {},
        KernelCall{KernelKind::accumulate, DType::fp32, VectorShape{4}, {in, acc}, {acc}});
  const Program p = std::move(b).finish();
  CHECK(read_only_slots(p, 0) == std::vector<SlotId>{in});
  (void)unused;
}

TEST_CASE("a rank's shard holds the unsharded tensor's elements at the same positions") {
  // The same seed on cp = 4 (ring and zigzag) and on cp = 1: every token's q and k/v values agree.
  const RingAttentionConfig one = small_ring(1, RingVariant::ring);
  const Program p1 = build_ring_attention(one);
  TensorStore s1(p1, 0);
  fill_inputs(s1, p1, ring_attention_layout(one), 42);
  const auto* q1 = reinterpret_cast<const float*>(s1.bytes(slot_named(p1, 0, "q")).data());
  const std::int64_t row = one.heads * one.head_dim;  // q elements per token
  for (RingVariant v : {RingVariant::ring, RingVariant::zigzag}) {
    const RingAttentionConfig four = small_ring(4, v);
    const Program p4 = build_ring_attention(four);
    for (int r = 0; r < 4; ++r) {
      TensorStore s(p4, r);
      const FillSummary f = fill_inputs(s, p4, ring_attention_layout(four), 42);
      CHECK(f.from_layout == 3);  // q, kv, dout
      CHECK(f.by_name == 0);
      const auto* q = reinterpret_cast<const float*>(s.bytes(slot_named(p4, r, "q")).data());
      std::int64_t local = 0;
      for (const TokenRange& t : rank_tokens(four, r)) {
        for (std::int64_t pos = t.begin; pos < t.end; ++pos, ++local) {
          for (std::int64_t e = 0; e < row; ++e) CHECK(q[local * row + e] == q1[pos * row + e]);
        }
      }
      // Outputs and accumulators stay zero.
      const auto out = s.bytes(slot_named(p4, r, "out_acc"));
      CHECK(std::all_of(out.begin(), out.end(), [](std::byte x) { return x == std::byte{0}; }));
    }
  }
}

TEST_CASE("fills are the generator's stored values, and differ between seeds") {
  TpLinearConfig c;
  c.tp = 2;
  c.tokens = 4;
  c.in_features = 4;
  c.out_features = 4;
  c.kind = TpLinearKind::row;
  c.mode = TpMode::all_reduce;
  const Program p = build_tp_linear(c);
  const TensorLayout layout = tp_linear_layout(c);
  TensorStore a(p, 1), b(p, 1);
  fill_inputs(a, p, layout, 1);
  fill_inputs(b, p, layout, 2);
  const SlotId w = slot_named(p, 1, "w");  // rank 1 holds columns 2..3 of W [4, 4]
  const ValueGenerator gen(1, "w", 0.5);   // scale 1/sqrt(in) = 1/2
  for (std::int64_t i = 0; i < 4; ++i) {
    for (std::int64_t j = 0; j < 2; ++j) {
      CHECK(load_element(DType::bf16, a.bytes(w).data(), i * 2 + j) ==
            gen.stored(i * 4 + 2 + j, DType::bf16));
    }
  }
  CHECK(std::vector<std::byte>(a.bytes(w).begin(), a.bytes(w).end()) !=
        std::vector<std::byte>(b.bytes(w).begin(), b.bytes(w).end()));
}

TEST_CASE("read-only slots the layout does not know are filled by rank and name") {
  const RingAttentionConfig c = small_ring(2, RingVariant::ring);
  const Program p = build_ring_attention(c);
  TensorStore with(p, 1), without(p, 1);
  fill_inputs(with, p, ring_attention_layout(c), 5);
  const FillSummary f = fill_inputs(without, p, TensorLayout{}, 5);
  CHECK(f.from_layout == 0);
  CHECK(f.by_name == 3);  // q, kv, dout are never written
  const SlotId q = slot_named(p, 1, "q");
  CHECK(load_element(DType::fp32, without.bytes(q).data(), 0) ==
        ValueGenerator(5, "rank1/q").stored(0, DType::fp32));
}
