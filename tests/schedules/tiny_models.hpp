#pragma once
// Small models shared by the step tests (test_training_step, test_layer_layout,
// test_microbatch_recompute): every op of a step on them is cheap to build and simulate.
#include "schedules/model_catalog.hpp"

namespace meshsim::test {

// A small GQA + SwiGLU model: h 64, 4 heads (d 16), 2 KV heads, f 128, V 256, seq 32.
inline TransformerModel tiny_gqa_model(int layers) {
  TransformerModel m;
  m.name = "tiny";
  m.layers = layers;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn_hidden = 128;
  m.vocab = 256;
  m.seq_len = 32;
  return m;
}

}  // namespace meshsim::test
