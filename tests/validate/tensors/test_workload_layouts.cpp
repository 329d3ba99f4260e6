#include <doctest/doctest.h>

#include <map>
#include <set>

#include "validate/tensors/tensor_store.hpp"
#include "validate/tensors/workload_layouts.hpp"

using namespace meshsim;

namespace {

// Every shard of the layout names an existing slot of its rank with as many elements; and the
// shards of `tensor` over all ranks cover each of its elements `copies` times.
void check_against_program(const TensorLayout& layout, const Program& p,
                           const std::map<std::string, int>& copies) {
  for (const TensorSlot& s : p.slots) {
    const ShardSpec* shard = layout.shard(s.rank, s.name);
    if (shard == nullptr) continue;
    CHECK(shard_elements(*shard) * dtype_bytes(s.dtype) == TensorStore::slot_bytes(s));
  }
  for (const auto& [tensor, n] : copies) {
    const GlobalTensor* t = layout.tensor(tensor);
    REQUIRE(t != nullptr);
    std::int64_t size = 1;
    for (auto d : t->shape) size *= d;
    std::vector<int> seen(static_cast<std::size_t>(size), 0);
    for (const auto& holder : layout.holders(tensor)) {
      const int rank = holder.first;
      const std::string& slot = holder.second;
      bool exists = false;
      for (const TensorSlot& s : p.slots) exists = exists || (s.rank == rank && s.name == slot);
      CHECK_MESSAGE(exists, "rank ", rank, " has no slot '", slot, "'");
      for_each_element(*layout.shard(rank, slot), t->shape,
                       [&](std::int64_t, std::int64_t g) { ++seen[static_cast<std::size_t>(g)]; });
    }
    for (int c : seen) CHECK(c == n);
  }
}

}  // namespace

TEST_CASE("ring attention: the ranks' q, kv and outputs tile the global tensors exactly once") {
  for (RingVariant v : {RingVariant::ring, RingVariant::zigzag}) {
    RingAttentionConfig c;
    c.cp = 4;
    c.seq = 32;
    c.heads = 4;
    c.kv_heads = 2;
    c.head_dim = 4;
    c.batch = 2;
    c.variant = v;
    const TensorLayout layout = ring_attention_layout(c);
    check_against_program(
        layout, build_ring_attention(c),
        {{"q", 1}, {"kv", 1}, {"out", 1}, {"lse", 1}, {"dout", 1}, {"dq", 1}, {"dkv", 1}});
    CHECK(layout.tensor("q")->input);
    CHECK_FALSE(layout.tensor("out")->input);
    CHECK(layout.tensor("kv")->parts == std::vector<std::string>{"k", "v"});
  }
  // Zigzag rank 0 of 4 holds chunks 0 and 7 of 8 (4 tokens each of 32).
  RingAttentionConfig z;
  z.cp = 4;
  z.seq = 32;
  const TensorLayout layout = ring_attention_layout(z);
  CHECK(layout.shard(0, "q")->axes[1] == std::vector<IndexRange>{{0, 4}, {28, 32}});
}

TEST_CASE("ring attention backward only: out and lse become inputs") {
  RingAttentionConfig c;
  c.cp = 2;
  c.seq = 16;
  c.pass = AttentionPass::bwd;
  const TensorLayout layout = ring_attention_layout(c);
  CHECK(layout.tensor("out")->input);
  CHECK(layout.tensor("lse")->input);
}

TEST_CASE("tp linear: shards tile the layer's tensors, replicated ones once per rank") {
  for (TpLinearKind kind : {TpLinearKind::column, TpLinearKind::row}) {
    for (TpMode mode : {TpMode::all_reduce, TpMode::reduce_scatter}) {
      TpLinearConfig c;
      c.tp = 4;
      c.tokens = 16;
      c.in_features = 8;
      c.out_features = 12;
      c.kind = kind;
      c.mode = mode;
      c.bias = true;
      const bool sp = mode == TpMode::reduce_scatter;
      const bool column = kind == TpLinearKind::column;
      // Activations outside the layer pair are whole on every rank without sequence parallelism.
      const int outer = sp ? 1 : 4;
      std::map<std::string, int> copies{{"w", 1}, {"dw", 1}};
      copies[column ? "x" : "y"] = outer;
      copies[column ? "dx" : "dy"] = outer;
      copies[column ? "y" : "x"] = 1;
      copies[column ? "dy" : "dx"] = 1;
      copies["b"] = column ? 1 : 4;
      copies["db"] = column ? 1 : 4;
      CAPTURE(column);
      CAPTURE(sp);
      check_against_program(tp_linear_layout(c), build_tp_linear(c), copies);
    }
  }
}
