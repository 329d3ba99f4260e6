#pragma once
// The models and plans the memory-model tests share (test_memory_model, test_activation_terms).
#include "schedules/memory_model.hpp"
#include "sim/hardware_profile.hpp"

namespace meshsim::test {

// The paper's case: MHA, f = 4h, GELU, dropout (Korthikanti et al. 2022). h = 64, a = 4, V = 1000.
inline TransformerModel paper_model() {
  TransformerModel m;
  m.name = "paper";
  m.layers = 4;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 256;
  m.vocab = 1000;
  m.seq_len = 32;
  m.gated_mlp = false;
  m.tied_embeddings = false;
  m.norm = NormKind::layernorm;
  m.linear_bias = true;
  m.position = PositionEmbedding::learned;
  m.dropout = true;
  return m;
}

inline MemoryPlan paper_plan(int tp, bool sp, Recompute r) {
  MemoryPlan p;
  p.tp = tp;
  p.microbatch_size = 2;  // b
  p.seq = 32;             // s
  p.sequence_parallel = sp;
  p.recompute = r;
  p.attention_core = AttentionCore::materialized;
  return p;
}

inline HardwareProfile with_memory(double bytes) {
  HardwareProfile hw = load_hardware("h100-sxm");
  hw.memory_bytes = bytes;
  return hw;
}

}  // namespace meshsim::test
