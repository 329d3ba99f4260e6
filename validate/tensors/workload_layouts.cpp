#include "validate/tensors/workload_layouts.hpp"

#include <cmath>

namespace meshsim {
namespace {

std::vector<IndexRange> ranges_of(const std::vector<TokenRange>& tokens) {
  std::vector<IndexRange> out;
  out.reserve(tokens.size());
  for (const auto& t : tokens) out.push_back(IndexRange{t.begin, t.end});
  return out;
}

// The rank's part of a tensor: whole on every axis except `axis`, which is `part`.
ShardSpec part_on_axis(const TensorLayout& layout, const std::string& tensor, std::size_t axis,
                       std::vector<IndexRange> part) {
  ShardSpec s{tensor, whole(layout.tensor(tensor)->shape)};
  s.axes[axis] = std::move(part);
  return s;
}

ShardSpec whole_of(const TensorLayout& layout, const std::string& tensor) {
  return ShardSpec{tensor, whole(layout.tensor(tensor)->shape)};
}

}  // namespace

TensorLayout ring_attention_layout(const RingAttentionConfig& c) {
  TensorLayout layout;
  const bool fwd = c.pass != AttentionPass::bwd;
  const bool bwd = c.pass != AttentionPass::fwd;
  const std::vector<std::int64_t> q_shape{c.batch, c.seq, c.heads, c.head_dim};
  const std::vector<std::int64_t> kv_shape{2, c.batch, c.seq, c.kv_heads, c.head_dim};
  const std::vector<std::int64_t> lse_shape{c.batch, c.heads, c.seq};
  layout.add_tensor({"q", q_shape, true});
  layout.add_tensor({"kv", kv_shape, true, 1.0, {"k", "v"}});
  layout.add_tensor({"out", q_shape, !fwd});
  layout.add_tensor({"lse", lse_shape, !fwd});
  if (bwd) {
    layout.add_tensor({"dout", q_shape, true});
    layout.add_tensor({"dq", q_shape, false});
    layout.add_tensor({"dkv", kv_shape, false, 1.0, {"dk", "dv"}});
  }
  for (int r = 0; r < c.cp; ++r) {
    const std::vector<IndexRange> tokens = ranges_of(rank_tokens(c, r));
    layout.add_shard(r, "q", part_on_axis(layout, "q", 1, tokens));
    layout.add_shard(r, "kv", part_on_axis(layout, "kv", 2, tokens));
    layout.add_shard(r, "out", part_on_axis(layout, "out", 1, tokens));
    layout.add_shard(r, "lse", part_on_axis(layout, "lse", 2, tokens));
    if (bwd) {
      layout.add_shard(r, "dout", part_on_axis(layout, "dout", 1, tokens));
      layout.add_shard(r, "dq", part_on_axis(layout, "dq", 1, tokens));
      layout.add_shard(r, "dkv", part_on_axis(layout, "dkv", 2, tokens));
    }
  }
  return layout;
}

TensorLayout tp_linear_layout(const TpLinearConfig& c) {
  TensorLayout layout;
  const bool fwd = c.pass != TpPass::bwd;
  const bool bwd = c.pass != TpPass::fwd;
  const bool column = c.kind == TpLinearKind::column;
  const bool split_tokens = c.mode == TpMode::reduce_scatter && c.tp > 1;
  const std::int64_t t = c.tp;
  layout.add_tensor({"x", {c.tokens, c.in_features}, true});
  layout.add_tensor({"w",
                     {c.out_features, c.in_features},
                     true,
                     1.0 / std::sqrt(static_cast<double>(c.in_features))});
  if (c.bias) layout.add_tensor({"b", {c.out_features}, true});
  if (fwd) layout.add_tensor({"y", {c.tokens, c.out_features}, false});
  if (bwd) {
    layout.add_tensor({"dy", {c.tokens, c.out_features}, true});
    layout.add_tensor({"dx", {c.tokens, c.in_features}, false});
    layout.add_tensor({"dw", {c.out_features, c.in_features}, false});
    if (c.bias) layout.add_tensor({"db", {c.out_features}, false});
  }
  for (int r = 0; r < c.tp; ++r) {
    const std::int64_t rows = c.tokens / t;
    const std::vector<IndexRange> my_rows{{r * rows, (r + 1) * rows}};
    // The rank's token rows of an activation outside the layer pair, or all of it.
    auto outer = [&](const std::string& name) {
      return split_tokens ? part_on_axis(layout, name, 0, my_rows) : whole_of(layout, name);
    };
    if (column) {
      const std::int64_t n = c.out_features / t;
      const std::vector<IndexRange> mine{{r * n, (r + 1) * n}};
      layout.add_shard(r, "x", outer("x"));
      layout.add_shard(r, "w", part_on_axis(layout, "w", 0, mine));
      if (c.bias) layout.add_shard(r, "b", part_on_axis(layout, "b", 0, mine));
      if (fwd) layout.add_shard(r, "y", part_on_axis(layout, "y", 1, mine));
      if (bwd) {
        layout.add_shard(r, "dy", part_on_axis(layout, "dy", 1, mine));
        layout.add_shard(r, "dx", outer("dx"));
        layout.add_shard(r, "dw", part_on_axis(layout, "dw", 0, mine));
        if (c.bias) layout.add_shard(r, "db", part_on_axis(layout, "db", 0, mine));
      }
    } else {
      const std::int64_t k = c.in_features / t;
      const std::vector<IndexRange> mine{{r * k, (r + 1) * k}};
      layout.add_shard(r, "x", part_on_axis(layout, "x", 1, mine));
      layout.add_shard(r, "w", part_on_axis(layout, "w", 1, mine));
      if (c.bias) layout.add_shard(r, "b", whole_of(layout, "b"));
      if (fwd) layout.add_shard(r, "y", outer("y"));
      if (bwd) {
        layout.add_shard(r, "dy", outer("dy"));
        layout.add_shard(r, "dx", part_on_axis(layout, "dx", 1, mine));
        layout.add_shard(r, "dw", part_on_axis(layout, "dw", 1, mine));
        if (c.bias) layout.add_shard(r, "db", whole_of(layout, "db"));
      }
    }
  }
  return layout;
}

TensorLayout pipeline_layout(const PipelineConfig& c) {
  TensorLayout layout;
  const int v = chunks_of(c.shape);
  const int stages = c.shape.stages * v;
  const int m = c.shape.microbatches;
  const std::vector<std::int64_t> act_shape{m, c.tokens, c.hidden};
  const std::vector<std::int64_t> w_shape{stages, c.hidden, c.hidden};
  layout.add_tensor({"x", act_shape, true});
  layout.add_tensor({"w", w_shape, true, 1.0 / std::sqrt(static_cast<double>(c.hidden))});
  layout.add_tensor({"dout", act_shape, true});
  layout.add_tensor({"y", act_shape, false});
  layout.add_tensor({"dx", act_shape, false});
  layout.add_tensor({"dw", w_shape, false});
  // Index `i` of axis 0 of `tensor`, whole on the others.
  auto index = [&](const std::string& tensor, std::int64_t i) {
    return part_on_axis(layout, tensor, 0, {IndexRange{i, i + 1}});
  };
  for (int r = 0; r < c.shape.stages; ++r) {
    for (int ch = 0; ch < v; ++ch) {
      const int s = global_stage(c.shape, r, ch);
      layout.add_shard(r, pipeline_slot_name("w", ch), index("w", s));
      layout.add_shard(r, pipeline_slot_name("dw", ch), index("dw", s));
      for (int mb = 0; mb < m; ++mb) {
        if (s == 0) {
          layout.add_shard(r, pipeline_slot_name("x", ch, mb), index("x", mb));
          layout.add_shard(r, pipeline_slot_name("dx", ch, mb), index("dx", mb));
        }
        if (s == stages - 1) {
          layout.add_shard(r, pipeline_slot_name("dy", ch, mb), index("dout", mb));
          layout.add_shard(r, pipeline_slot_name("y", ch, mb), index("y", mb));
        }
      }
    }
  }
  return layout;
}

}  // namespace meshsim
