// The per-layer and per-stage activation terms (schedules/activation_terms.cpp), by hand.
#include <doctest/doctest.h>

#include "schedules/memory_model.hpp"
#include "tests/schedules/memory_test_models.hpp"

using namespace meshsim;
using test::paper_model;
using test::paper_plan;

TEST_CASE("activation terms: Korthikanti et al. per-layer activations, by hand") {
  const TransformerModel m = paper_model();
  // s = 32, b = 2, h = 64, a = 4: sbh = 4096, 5as/h = 5 · 4 · 32 / 64 = 10.
  SUBCASE("no parallelism: sbh(34 + 5as/h) = 4096 · 44") {
    CHECK(activation_terms(m, paper_plan(1, false, Recompute::none)).layer_stored == 180'224.0);
  }
  SUBCASE("t = 2 with sequence parallelism: sbh(34 + 5as/h) / t") {
    CHECK(activation_terms(m, paper_plan(2, true, Recompute::none)).layer_stored == 90'112.0);
  }
  SUBCASE("t = 2 without sequence parallelism: sbh(10 + 24/t + 5as/(ht)) = 4096 · 27") {
    CHECK(activation_terms(m, paper_plan(2, false, Recompute::none)).layer_stored == 110'592.0);
  }
  SUBCASE("selective recompute: 34sbh / t, the core recomputed one layer at a time") {
    const auto a = activation_terms(m, paper_plan(2, true, Recompute::selective));
    CHECK(a.layer_stored == 69'632.0);   // 34 · 4096 / 2
    CHECK(a.layer_working == 20'480.0);  // 5as²b / t = 5 · 4 · 32² · 2 / 2
  }
  SUBCASE("full recompute: 2sbh / t stored, one whole layer while it is recomputed") {
    const auto a = activation_terms(m, paper_plan(2, true, Recompute::full));
    CHECK(a.layer_stored == 4'096.0);  // 2 · 4096 / 2
    CHECK(a.layer_working == 90'112.0);
  }
  SUBCASE("extras: embedding dropout mask sbh/t, output layer 4sbh/t (1 + V/h)") {
    const auto a = activation_terms(m, paper_plan(2, true, Recompute::none));
    CHECK(a.embedding_extra == 2'048.0);  // 4096 / 2
    // 4 · 4096 / 2 · (1 + 1000 / 64) = 8192 + 128,000
    CHECK(a.output_extra == 136'192.0);
  }
  SUBCASE("flash attention keeps the fp32 log-sum-exp instead of the s x s core") {
    MemoryPlan p = paper_plan(2, true, Recompute::none);
    p.attention_core = AttentionCore::flash;
    // 34sbh/t + 4 · a · s · b / t = 69,632 + 4 · 4 · 32 · 2 / 2 = 69,632 + 512
    CHECK(activation_terms(m, p).layer_stored == 70'144.0);
    p.recompute = Recompute::selective;
    const auto a = activation_terms(m, p);
    CHECK(a.layer_stored == 69'632.0);
    CHECK(a.layer_working == 0.0);
  }
}

TEST_CASE("activation terms: GQA and SwiGLU adaptation (llama3-8b layer)") {
  const TransformerModel m = *builtin_model("llama3-8b");
  MemoryPlan p;
  p.tp = 8;
  p.seq = 8192;
  // No dropout: kept whole 2·2 (norm inputs) + 2 (QKV input) + 2 (MLP input) = 8 sbh;
  // split over t: Q 2 + K,V 4 · 8/32 = 1 + projection 2 + SwiGLU 6f/h = 6 · 3.5 = 21 -> 26 sbh.
  // sbh = 8192 · 4096 = 33,554,432: 34 sbh / 8 = 142,606,336, + lse 4 · 32 · 8192 / 8 = 131,072.
  CHECK(activation_terms(m, p).layer_stored == 142'737'408.0);
  // With CP 4 every term sees s = 2048 tokens: a quarter (flash has no s² term).
  p.cp = 4;
  const auto a = activation_terms(m, p);
  CHECK(a.layer_stored == 142'737'408.0 / 4);
  // KV_r = 2 · b · s · (kv/t) · d · e = 2 · 1 · 2048 · 1 · 128 · 2 = 1 MiB; p2p ring holds 2.
  CHECK(a.kv_rank == 1'048'576.0);
  CHECK(a.cp_buffers == 2'097'152.0);
  p.kv_rotation = KvRotation::all_gather;
  CHECK(activation_terms(m, p).cp_buffers == 4 * 1'048'576.0);  // the gathered K/V of 4 ranks
}
