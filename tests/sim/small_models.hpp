#pragma once
// A Llama-like model small enough to simulate unfolded a few hundred times, shared by the flow
// tests (test_flow_plan, test_flow_fold): h 2048, 16 heads (d 128), 8 KV heads, f 8192, V 32000,
// seq 2048, 8 layers; its collectives are tens of MB, so bandwidth dominates their time.
#include "schedules/model_catalog.hpp"

namespace meshsim::test {

inline TransformerModel small_llama() {
  TransformerModel m;
  m.name = "small-llama";
  m.layers = 8;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 8;
  m.ffn_hidden = 8192;
  m.vocab = 32000;
  m.seq_len = 2048;
  return m;
}

}  // namespace meshsim::test
