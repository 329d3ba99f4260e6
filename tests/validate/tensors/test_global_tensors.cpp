#include <doctest/doctest.h>

#include "schedules/ring_attention.hpp"
#include "validate/tensors/global_tensors.hpp"
#include "validate/tensors/input_fill.hpp"
#include "validate/tensors/value_generator.hpp"
#include "validate/tensors/workload_layouts.hpp"

using namespace meshsim;

TEST_CASE("the ranks' shards assemble into the unsharded inputs; kv splits into k and v") {
  RingAttentionConfig c;
  c.cp = 2;
  c.seq = 8;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 2;
  c.pass = AttentionPass::fwd;
  const Program p = build_ring_attention(c);
  const TensorLayout layout = ring_attention_layout(c);
  std::vector<std::vector<std::byte>> packages;
  for (int r = 0; r < 2; ++r) {
    TensorStore store(p, r);
    fill_inputs(store, p, layout, 3);
    packages.push_back(pack_shards(p, layout, store));
  }
  const auto tensors = assemble_global_tensors(p, layout, packages);
  REQUIRE(tensors.size() == 4);  // q, kv, out, lse
  CHECK(tensors[0].name == "q");
  CHECK(tensors[0].shape == std::vector<std::int64_t>{1, 8, 2, 2});
  CHECK(tensors[0].elements_written == 32);
  const ValueGenerator q(3, "q");
  for (std::size_t i = 0; i < tensors[0].values.size(); ++i) {
    CHECK(tensors[0].values[i] == q.stored(static_cast<std::int64_t>(i), DType::bf16));
  }
  const auto dumped = dump_tensors(layout, tensors);
  REQUIRE(dumped.size() == 5);  // q, k, v, out, lse
  CHECK(dumped[1].name == "k");
  CHECK(dumped[2].name == "v");
  CHECK(dumped[2].shape == std::vector<std::int64_t>{1, 8, 1, 2});
  const ValueGenerator kv(3, "kv");
  CHECK(dumped[2].values[0] == kv.stored(16, DType::bf16));  // v starts after k's 16 elements
}
