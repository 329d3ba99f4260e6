#include <doctest/doctest.h>

#include <memory>

#include "schedules/ring_attention.hpp"
#include "sim/error.hpp"
#include "validate/run/kernel_operands.hpp"
#include "validate/tensors/tensor_store.hpp"

using namespace meshsim;

namespace {

// One rank's slots (zero-filled); operands are bound on them through SlotViews.
struct Slots {
  explicit Slots(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& shapes)
      : builder(Mesh({{"x", 1}}, 1), true, "operands") {
    for (const auto& [name, shape] : shapes)
      ids.push_back(builder.slot(0, name, DType::fp32, shape));
    program = builder.peek();
    store = std::make_unique<TensorStore>(program, 0);
  }
  SlotViews views() { return SlotViews(*store); }
  ProgramBuilder builder;
  Program program;
  std::vector<SlotId> ids;
  std::unique_ptr<TensorStore> store;
};

KernelCall gemm_call(SlotId a, SlotId b, SlotId c, bool trans_a) {
  KernelCall call;
  call.kind = KernelKind::gemm;
  call.inputs = {a, b};
  call.outputs = {c};
  GemmShape g;
  g.m = 4;
  g.n = 3;
  g.k = 2;
  g.trans_a = trans_a;
  call.shape = g;
  return call;
}

}  // namespace

TEST_CASE("injected faults: names round-trip, and only gemm_scale scales a GEMM") {
  for (auto f : {InjectedFault::none, InjectedFault::attention_mask, InjectedFault::lse_merge,
                 InjectedFault::gemm_scale}) {
    CHECK(parse_injected_fault(to_string(f)) == f);
  }
  CHECK_FALSE(parse_injected_fault("gemm"));
  CHECK(gemm_alpha(InjectedFault::none) == 1.0);
  CHECK(gemm_alpha(InjectedFault::lse_merge) == 1.0);
  CHECK(gemm_alpha(InjectedFault::gemm_scale) == kFaultyGemmAlpha);
}

TEST_CASE("a GEMM's operands: A as stored ([k, m] when transposed), B [k, n], C [m, n]") {
  Slots s({{"a", {2, 4}}, {"b", {2, 3}}, {"c", {4, 3}}});
  const SlotViews v = s.views();
  const GemmOperands g =
      bind_gemm(v, gemm_call(s.ids[0], s.ids[1], s.ids[2], true), InjectedFault::gemm_scale);
  CHECK(g.trans_a);
  CHECK(g.a.rows == 2);  // k
  CHECK(g.a.cols == 4);  // m
  CHECK(g.b.rows == 2);
  CHECK(g.b.cols == 3);
  CHECK(g.c.rows == 4);
  CHECK(g.c.cols == 3);
  CHECK(g.alpha == kFaultyGemmAlpha);
  CHECK(g.beta == 0.0);
  // Untransposed, A must be [m, k] = 8 elements: the [2, 4] slot fits, a [3, 3] one does not.
  Slots bad({{"a", {3, 3}}, {"b", {2, 3}}, {"c", {4, 3}}});
  const SlotViews bv = bad.views();
  CHECK_THROWS_AS(
      bind_gemm(bv, gemm_call(bad.ids[0], bad.ids[1], bad.ids[2], false), InjectedFault::none),
      InvariantError);
}

TEST_CASE("accumulate and copy bind the first `elements`; operand counts are checked") {
  Slots s({{"x", {8}}, {"y", {8}}});
  const SlotViews v = s.views();
  KernelCall call;
  call.kind = KernelKind::accumulate;
  call.inputs = {s.ids[0], s.ids[1]};
  call.outputs = {s.ids[1]};
  call.shape = VectorShape{5};
  const auto pairs = bind_accumulate(v, call);
  REQUIRE(pairs.size() == 1);
  CHECK(pairs[0].x.size == 5);
  CHECK(pairs[0].y.size == 5);
  call.outputs = {s.ids[0]};  // accumulate adds into its second input
  CHECK_THROWS_AS(bind_accumulate(v, call), InvariantError);
  call.kind = KernelKind::copy;
  call.inputs = {s.ids[0]};
  call.outputs = {s.ids[1]};
  call.shape = VectorShape{9};  // more than the slots hold
  CHECK_THROWS_AS(bind_copy(v, call), InvariantError);
  KernelCall act;
  act.kind = KernelKind::elementwise;
  act.fn = ElementwiseFn::gelu;
  act.inputs = {s.ids[0], s.ids[1]};  // one input expected
  act.outputs = {s.ids[1]};
  act.shape = VectorShape{8};
  CHECK_THROWS_AS(bind_activation(v, act), InvariantError);
}

TEST_CASE("an injected fault applies only to a Program with something to fault") {
  RingAttentionConfig c;
  c.seq = 16;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 4;
  c.cp = 1;  // one rank: one attention block, nothing to merge
  const Program one = build_ring_attention(c);
  CHECK_FALSE(fault_applies(InjectedFault::lse_merge, one));
  CHECK(fault_applies(InjectedFault::attention_mask, one));  // causal by default
  CHECK_FALSE(fault_applies(InjectedFault::gemm_scale, one));
  CHECK_FALSE(fault_applies(InjectedFault::none, one));
  c.cp = 2;
  CHECK(fault_applies(InjectedFault::lse_merge, build_ring_attention(c)));
  c.causal = false;
  c.variant = RingVariant::ring;  // zigzag needs a causal mask
  CHECK_FALSE(fault_applies(InjectedFault::attention_mask, build_ring_attention(c)));
}
