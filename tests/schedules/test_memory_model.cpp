#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "schedules/memory_model.hpp"
#include "schedules/pipeline.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "tests/schedules/memory_test_models.hpp"

using namespace meshsim;

using test::paper_model;
using test::paper_plan;
using test::with_memory;

TEST_CASE("memory model: uneven layer split (Megatron first/last-stage option)") {
  // 126 layers over 16 stages: k = ceil(126/16) = 8 on 14 middle stages, rest 126 - 112 = 14
  // shared 7 / 7 — the Llama 3 405B split.
  const LayerSplit s = split_layers(126, 16);
  CHECK(s.uneven);
  CHECK(s.first == 7);
  CHECK(s.middle == 8);
  CHECK(s.last == 7);
  std::vector<int> expect(16, 8);
  expect.front() = expect.back() = 7;
  CHECK(s.layers == expect);
  CHECK(s.rule ==
        "126 layers over 16 pipeline stages (not divisible): Megatron's uneven first/last-stage "
        "option, first stage 7, 14 middle stages x 8 (ceil(126 / 16)), last stage 7");
  // Even: 32 / 4 = 8 each.
  const LayerSplit e = split_layers(32, 4);
  CHECK_FALSE(e.uneven);
  CHECK(e.layers == std::vector<int>{8, 8, 8, 8});
  // 126 over 32 global stages (pp 16 x vp 2): k = 4, rest 126 - 30·4 = 6 -> 3 / 3.
  const LayerSplit v = split_layers(126, 32);
  CHECK(v.first == 3);
  CHECK(v.last == 3);
  // 126 over 128: one layer per middle stage, the first and last hold only the embedding and the
  // head (the Llama 3 paper's note).
  const LayerSplit l = split_layers(126, 128);
  CHECK(l.first == 0);
  CHECK(l.last == 0);
  // Odd rest: 31 over 4 -> k = 8, rest 15 -> first 8, last 7.
  CHECK(split_layers(31, 4).layers == std::vector<int>{8, 8, 8, 7});
  // 10 over 8: 6 middle stages of 2 need 12 > 10.
  CHECK_THROWS_WITH_AS(split_layers(10, 8),
                       "10 layers cannot be split over 8 pipeline stages: not evenly (10 mod 8 = "
                       "2) and not by Megatron's uneven first/last-stage option (6 middle stages "
                       "of ceil(10 / 8) = 2 layers need 12 > 10)",
                       InputError);
}

TEST_CASE("memory model: weights, gradients and optimizer state per rank; distributed optimizer") {
  const TransformerModel m = *builtin_model("llama3-70b");
  MemoryPlan p;
  p.tp = 8;
  p.pp = 4;
  p.dp = 8;
  p.cp = 2;
  p.microbatches = 8;
  p.seq = 8192;
  p.recompute = Recompute::selective;
  const HardwareProfile hw = with_memory(80e9);
  const MemoryEstimate plain = estimate_memory(m, p, hw);
  p.distributed_optimizer = true;
  const MemoryEstimate sharded = estimate_memory(m, p, hw);
  REQUIRE(plain.stages.size() == 4);
  // Layer shard: (855,654,400 - 16,384 norm) / 8 + 16,384 = 106,971,136; 20 layers per stage.
  // Rank 0 adds the word embedding: 128256 / 8 · 8192 = 131,334,144.
  CHECK(plain.stages[0].parameters == 20 * 106'971'136LL + 131'334'144LL);
  CHECK(plain.stages[1].parameters == 20 * 106'971'136LL);
  // Rank 3 adds the final norm (8192) and its untied head shard (131,334,144).
  CHECK(plain.stages[3].parameters == 20 * 106'971'136LL + 8'192 + 131'334'144LL);
  for (std::size_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    const auto& a = plain.stages[r];
    const auto& b = sharded.stages[r];
    const double n = static_cast<double>(a.parameters);
    CHECK(a.weights == 2 * n);     // bf16
    CHECK(a.gradients == 4 * n);   // fp32 gradient buffer
    CHECK(a.optimizer == 12 * n);  // fp32 master + Adam m + v
    // ZeRO-1 over the dp x cp = 16 ranks holding the same weights: 12 / 16 bytes per parameter.
    CHECK(b.optimizer == doctest::Approx(a.optimizer / 16));
    CHECK(b.weights == a.weights);
    CHECK(b.gradients == a.gradients);
    CHECK(b.activations == a.activations);
  }
}

TEST_CASE("memory model: activations follow the schedule's peak in-flight microbatches") {
  const TransformerModel m = *builtin_model("llama3-8b");
  MemoryPlan p;
  p.tp = 2;
  p.pp = 4;
  p.microbatches = 8;
  p.seq = 4096;
  const HardwareProfile hw = with_memory(80e9);
  // 1F1B p = 4, m = 8: peak in-flight 4, 3, 2, 1 (ARCHITECTURE.md §4.2).
  const MemoryEstimate est = estimate_memory(m, p, hw);
  const auto a = activation_terms(m, p);
  REQUIRE(est.stages.size() == 4);
  CHECK(est.stages[0].inflight == 4);
  CHECK(est.stages[3].inflight == 1);
  CHECK(est.stages[0].chunk_layers == std::vector<int>{8});
  CHECK(est.stages[0].activations == 4 * 8 * a.layer_stored);  // no dropout: no embedding extra
  CHECK(est.stages[1].activations == 3 * 8 * a.layer_stored);
  CHECK(est.stages[3].activations == 1 * (8 * a.layer_stored + a.output_extra));
  CHECK(est.stages[0].workspace == 2e9);
  CHECK(est.stages[0].cp_buffers == 0.0);
  // The explicit in-flight overload gives the same result.
  const std::vector<int> inflight = {4, 3, 2, 1};
  CHECK(estimate_memory(m, p, inflight, hw).peak_bytes == est.peak_bytes);
  // GPipe holds all m = 8 on every rank.
  p.schedule = PipelineSchedule::gpipe;
  CHECK(estimate_memory(m, p, hw).stages[2].inflight == 8);
  // Full recompute: 8 layer inputs per microbatch + one layer being recomputed.
  p.schedule = PipelineSchedule::one_f_one_b;
  p.recompute = Recompute::full;
  const auto f = activation_terms(m, p);
  const MemoryEstimate full = estimate_memory(m, p, hw);
  CHECK(full.stages[0].activations == 4 * 8 * f.layer_stored);
  CHECK(full.stages[0].recompute_working == f.layer_none);
}

TEST_CASE("memory model: interleaved in-flight chunks grow with the microbatch group size") {
  // Megatron's interleaved warm-up on rank r is 2(p-r-1) + (v-1)g forwards, plus the one in the
  // steady state: p = 4, v = 2, m = 24 holds 2*3 + g + 1 chunks on rank 0 (g = 4 by default,
  // g = 6 and 12 given) and g + 1 on the last rank.
  const TransformerModel m = *builtin_model("llama3-8b");
  MemoryPlan p;
  p.pp = 4;
  p.vp = 2;
  p.schedule = PipelineSchedule::interleaved;
  p.microbatches = 24;
  p.seq = 1024;
  const HardwareProfile hw = with_memory(80e9);
  for (const auto& [g_, rank0] : {std::pair{0, 11}, std::pair{6, 13}, std::pair{12, 19}}) {
    const int g = g_;
    CAPTURE(g);
    p.group_size = g;
    const MemoryEstimate est = estimate_memory(m, p, hw);
    CHECK(est.stages[0].inflight == rank0);
    CHECK(est.stages[3].inflight == rank0 - 6);
  }
}

TEST_CASE("memory model: interleaved and V schedules place the embedding and the head") {
  const TransformerModel m = *builtin_model("llama3-8b");
  MemoryPlan p;
  p.pp = 4;
  p.microbatches = 8;
  p.seq = 2048;
  p.schedule = PipelineSchedule::interleaved;
  p.vp = 2;
  const HardwareProfile hw = with_memory(80e9);
  const MemoryEstimate il = estimate_memory(m, p, hw);
  // 32 layers over 8 global stages: 4 per chunk; chunk c of rank r is stage c·p + r.
  CHECK(il.stages[0].chunk_layers == std::vector<int>{4, 4});
  CHECK(il.stages[0].embedding);
  CHECK_FALSE(il.stages[0].output_head);
  CHECK(il.stages[3].output_head);
  // DualPipeV: rank 0 holds stages 0 and 2p - 1, so the embedding and the head.
  p.schedule = PipelineSchedule::dualpipev;
  const MemoryEstimate v = estimate_memory(m, p, hw);
  CHECK(v.stages[0].embedding);
  CHECK(v.stages[0].output_head);
  CHECK(v.stages[0].parameters == 8 * count_parameters(m).per_layer + count_parameters(m).total -
                                      32 * count_parameters(m).per_layer);
}

TEST_CASE("memory model: interleaved ranks hold what their order holds, chunk by chunk") {
  // 4 layers, p = 2, v = 2, m = 2 (g = 2): one layer per chunk; rank 1's chunk 1 is the last
  // global stage (the head's output_extra). Rank 1's order: warm-up (v - 1)·g + 2(p - r - 1) = 2
  // forwards of chunk 0, then F(0, c1) B(0, c1) F(1, c1) B(1, c1) B(0, c0) B(1, c0): at most two
  // chunk-0 and one chunk-1 activation at once (inflight 3), 2·A0 + A1, where counting every
  // in-flight chunk as the largest would give 3·A1.
  const TransformerModel m = paper_model();
  MemoryPlan p = paper_plan(1, false, Recompute::none);
  p.pp = 2;
  p.vp = 2;
  p.schedule = PipelineSchedule::interleaved;
  p.microbatches = 2;
  const auto a = activation_terms(m, p);
  const HardwareProfile hw = with_memory(80e9);
  const MemoryEstimate est = estimate_memory(m, p, hw);
  CHECK(est.stages[1].inflight == 3);
  CHECK(est.stages[1].activations ==
        doctest::Approx(2 * a.layer_stored + (a.layer_stored + a.output_extra)));
  // The explicit in-flight overload (no order) keeps the bound: every chunk as the largest.
  const std::vector<int> inflight = {est.stages[0].inflight, 3};
  CHECK(estimate_memory(m, p, inflight, hw).stages[1].activations ==
        doctest::Approx(3 * (a.layer_stored + a.output_extra)));
}

TEST_CASE("memory model: micro-batch-level recompute keeps whole the forwards kept_whole picks") {
  // p = 2, v = 2, m = 2 (g = 2), full recompute, N = 1: rank 0 runs its 4 forwards before any
  // backward (warm-up 2(p - r - 1) + (v - 1)g = 4, window 4), so only the first, (mb 0, chunk 0),
  // is kept whole: W0 + S0 + 2·S1 at the peak, chunk 0 with the embedding's extra.
  const TransformerModel m = paper_model();
  MemoryPlan p = paper_plan(1, false, Recompute::full);
  p.pp = 2;
  p.vp = 2;
  p.schedule = PipelineSchedule::interleaved;
  p.microbatches = 2;
  p.whole_microbatches = 1;
  const auto a = activation_terms(m, p);
  const double s0 = a.layer_stored + a.embedding_extra, w0 = a.layer_none + a.embedding_extra;
  const MemoryEstimate est = estimate_memory(m, p, with_memory(80e9));
  CHECK(est.stages[0].inflight == 4);
  CHECK(est.stages[0].activations == doctest::Approx(w0 + s0 + 2 * a.layer_stored));
}

TEST_CASE("memory model: tied embeddings keep a copy on the last stage when pp > 1") {
  const TransformerModel g = *builtin_model("gpt3-175b");
  MemoryPlan p;
  p.tp = 8;
  p.pp = 1;
  const HardwareProfile hw = with_memory(1e15);
  const auto one = estimate_memory(g, p, hw).stages[0].parameters;
  p.pp = 2;
  p.microbatches = 2;
  const auto two = estimate_memory(g, p, hw);
  // The copy: ceil(50257 / 8) = 6283 rows x 12288 on the last stage.
  CHECK(two.stages[0].parameters + two.stages[1].parameters == one + 6283LL * 12288);
}

TEST_CASE("memory model: OOM against the profile's memory") {
  const TransformerModel m = *builtin_model("llama3-70b");
  MemoryPlan p;
  p.tp = 8;
  p.pp = 4;
  p.dp = 8;
  p.microbatches = 8;
  p.seq = 8192;
  p.recompute = Recompute::selective;
  p.distributed_optimizer = true;
  const MemoryEstimate fits = estimate_memory(m, p, load_hardware("h100-sxm"));
  CHECK_FALSE(fits.oom);
  CHECK(fits.capacity_bytes == 80e9);
  CHECK(fits.peak_rank == 0);  // 1F1B: rank 0 holds p microbatches and the embedding
  // One byte less than the peak: OOM.
  CHECK(estimate_memory(m, p, with_memory(fits.peak_bytes - 1)).oom);
  CHECK_FALSE(estimate_memory(m, p, with_memory(fits.peak_bytes)).oom);
  // 70B unsharded on one GPU: 18 bytes x 70.55e9 parameters alone exceed 80 GB.
  MemoryPlan single;
  single.seq = 8192;
  const MemoryEstimate one = estimate_memory(m, single, load_hardware("h100-sxm"));
  CHECK(one.oom);
  CHECK(one.stages[0].weights + one.stages[0].gradients + one.stages[0].optimizer ==
        18.0 * 70'553'706'496.0);
}

TEST_CASE("memory model: plans the model cannot take are rejected with the rule") {
  const TransformerModel m = *builtin_model("llama3-70b");
  MemoryPlan p;
  p.tp = 16;
  CHECK_THROWS_WITH_AS(check_memory_plan(m, p),
                       "`tp` 16 must divide the model's kv_heads (8): Megatron shards the KV "
                       "groups over tensor-parallel ranks",
                       InputError);
  p.tp = 8;
  p.cp = 3;
  CHECK_THROWS_WITH_AS(check_memory_plan(m, p),
                       "`seq` 8192 must be divisible by `cp` 3: each context-parallel rank holds "
                       "seq / cp tokens",
                       InputError);
  p.cp = 1;
  p.pp = 3;  // 80 layers over 3: k = 27 in the middle, rest 80 - 27 = 53 -> first 27, last 26
  CHECK_NOTHROW(check_memory_plan(m, p));
  p.pp = 0;
  CHECK_THROWS_AS(check_memory_plan(m, p), InputError);
  CHECK(parse_recompute("selective") == Recompute::selective);
  CHECK_FALSE(parse_recompute("partial").has_value());
  CHECK(to_string(Recompute::full) == "full");
}

TEST_CASE("memory model: torchtitan's selective-op recompute and FSDP2 state (llama3-8b)") {
  // torchtitan's Llama 3 8B run: tp 1, mbs 2, seq 8192, FSDP over 8 GPUs.
  const TransformerModel m = *builtin_model("llama3-8b");
  MemoryPlan p;
  p.dp = 8;
  p.seq = 8192;
  p.microbatch_size = 2;
  p.recompute = Recompute::selective_op;
  // sbh = 2 · 8192 · 4096 = 67,108,864, e = 2. Saved: layer input, wq out, attention out, w2 out
  // 4 · e·sbh = 536,870,912; wv out e·sb·kv = 2 · 16384 · 1024 = 33,554,432; w1 out
  // e·sb·f = 2 · 16384 · 14336 = 469,762,048; the lse 4 · 32 · 8192 · 2 = 2,097,152.
  const ActivationTerms a = activation_terms(m, p);
  CHECK(a.layer_stored == 1'042'284'544.0);
  CHECK(a.layer_working == a.layer_none - a.layer_stored);
  p.distributed_optimizer = true;
  p.sharding.zero = 3;
  p.sharding.fsdp = true;
  const MemoryEstimate est = estimate_memory(m, p, with_memory(96e9));
  const StageMemory& st = est.stages.at(0);
  const double n = static_cast<double>(st.parameters);
  // FSDP2: (4 + 4 + 8) / 8 bytes per parameter.
  CHECK(st.weights == doctest::Approx(4 * n / 8));
  CHECK(st.gradients == doctest::Approx(4 * n / 8));
  CHECK(st.optimizer == doctest::Approx(8 * n / 8));
  // Units: embedding 128256 · 4096 = 525,336,576; head + final norm 525,340,672; the two gathered
  // in bf16 + the largest's bf16 gradient and fp32 reduce-scatter input (6 bytes).
  CHECK(st.unsharded == doctest::Approx((525'340'672.0 + 525'336'576.0) * 2 + 525'340'672.0 * 6));
}

TEST_CASE("memory model: a layer's linear weights follow its attention's width and MLA") {
  // Qwen3 30B-A3B made dense (its ffn_hidden is the experts' 768): hidden 2048, 32 heads x 128 =
  // 4096 wide Q and O, 4 KV heads x 128 = 512: 2·2048·4096 + 2·2048·512 + 3·2048·768 (SwiGLU) =
  // 23,592,960 (Q and O counted as h x h would give 8,388,608 fewer).
  TransformerModel q = *builtin_model("qwen3-30b-a3b");
  q.moe.reset();
  CHECK(layer_linear_parameters_tp(q, 1) == 23'592'960);
  CHECK(layer_linear_parameters_tp(q, 2) == 23'592'960 / 2);
  // DeepSeek-V3's dense layers (hidden 7168, MLA: q LoRA 1536, kv LoRA 512, 128 heads, qk 128 +
  // 64 rope, v 128; FFN 18432): q down 7168·1536 = 11,010,048, q up 1536·128·192 = 37,748,736,
  // kv down 7168·(512 + 64) = 4,128,768, kv up 512·128·(128 + 128) = 16,777,216, output
  // 128·128·7168 = 117,440,512; MLP 3·7168·18432 = 396,361,728. Sum 583,467,008.
  const TransformerModel d = *builtin_model("deepseek-v3");
  CHECK(layer_linear_parameters_tp(d, 1) == 583'467'008);
}

TEST_CASE("memory model: FSDP's FP8 all-gather keeps a layer's linear weights at 1 byte each") {
  // llama3-8b on 8 GPUs, FSDP without resharding after forward: every unit of the rank stays
  // gathered. A layer: linear weights 2 · 4096² + 2 · 4096 · 1024 + 3 · 4096 · 14336 =
  // 218,103,808 and two RMSNorm weights 8,192. The embedding (525,336,576) and the final norm +
  // head (525,340,672) are gathered in bf16 in both cases.
  const TransformerModel m = *builtin_model("llama3-8b");
  MemoryPlan p;
  p.dp = 8;
  p.seq = 8192;
  p.sharding.zero = 3;
  p.sharding.fsdp = true;
  p.sharding.reshard_after_forward = false;
  const double ends = (525'336'576.0 + 525'340'672.0) * 2;
  const double gradients = 525'340'672.0 * 6;  // the largest unit's bf16 gradient + fp32 input
  const double bf16 = estimate_memory(m, p, with_memory(96e9)).stages.at(0).unsharded;
  CHECK(bf16 == doctest::Approx(ends + 32 * (218'103'808.0 + 8'192.0) * 2 + gradients));
  // fp8-current (torchtitan's enable_fsdp_float8_all_gather): 1 byte per linear weight.
  p.precision = Precision::fp8_current;
  const double fp8 = estimate_memory(m, p, with_memory(96e9)).stages.at(0).unsharded;
  CHECK(fp8 == doctest::Approx(ends + 32 * (218'103'808.0 + 8'192.0 * 2) + gradients));
  // Only fp8-current is gathered in FP8 (fsdp_gathers_quantized: torchao's tensorwise dynamic
  // scaling); delayed scaling gathers bf16.
  p.precision = Precision::fp8_delayed;
  CHECK(estimate_memory(m, p, with_memory(96e9)).stages.at(0).unsharded == doctest::Approx(bf16));
}

TEST_CASE("memory model: FP8 linears save their inputs in FP8 and keep FP8 weight copies") {
  // llama3-8b, tp 2 with SP, mbs 1, seq 4096, no recompute. s b = 4096, h = 4096, f = 14336,
  // e = 2, q = 1 (per-tensor FP8). Per layer the QKV and MLP-up inputs (whole / sp = / 2) lose
  // (e - q) s b h each, the MLP-down input (/ t) (e - q) s b f, and the projection input gains its
  // FP8 copy q s b h / t:
  //   -(2 · 4096 · 4096) / 2 - 4096 · 14336 / 2 + 4096 · 4096 / 2 = -37,748,736 bytes.
  const TransformerModel m = *builtin_model("llama3-8b");
  MemoryPlan p;
  p.tp = 2;
  p.seq = 4096;
  const ActivationTerms bf16 = activation_terms(m, p);
  p.precision = Precision::fp8_delayed;
  const ActivationTerms fp8 = activation_terms(m, p);
  CHECK(fp8.layer_none - bf16.layer_none == -37'748'736.0);
  CHECK(fp8.layer_stored - bf16.layer_stored == -37'748'736.0);
  // MXFP8's q = 1 + 1/32 keeps 1/32 byte more per quantized element:
  // (-2·4096·4096/2 - 4096·14336/2 + 4096·4096/2) + (1/32)(2·4096·4096/2 + 4096·14336/2 +
  // 4096·4096/2)
  p.precision = Precision::mxfp8;
  const double saved = 2 * 4096.0 * 4096 / 2 + 4096.0 * 14336 / 2 + 4096.0 * 4096 / 2;
  CHECK(activation_terms(m, p).layer_none - bf16.layer_none ==
        doctest::Approx(-37'748'736.0 + saved / 32));

  // Weights: a row-wise and a column-wise FP8 copy of every linear weight of the rank's 32 layers,
  // (2 h^2 + 2 h kv + 3 h f) / t = (2·4096² + 2·4096·1024 + 3·4096·14336) / 2 = 109,051,904 each.
  p.precision = Precision::fp8_delayed;
  const MemoryEstimate est = estimate_memory(m, p, with_memory(80e9));
  CHECK(layer_linear_parameters_tp(m, 2) == 109'051'904);
  CHECK(est.stages.at(0).quantized_weights == 2.0 * 32 * 109'051'904);
  p.precision = Precision::bf16;
  const MemoryEstimate base = estimate_memory(m, p, with_memory(80e9));
  CHECK(base.stages.at(0).quantized_weights == 0.0);
  CHECK(est.peak_bytes - base.peak_bytes ==
        doctest::Approx(2.0 * 32 * 109'051'904 + 32 * -37'748'736.0));
  // Under FSDP the gathered weights are freed after use: no cached copies.
  p.precision = Precision::fp8_current;
  p.distributed_optimizer = true;
  p.sharding.zero = 3;
  p.sharding.fsdp = true;
  CHECK(estimate_memory(m, p, with_memory(80e9)).stages.at(0).quantized_weights == 0.0);
}

TEST_CASE("memory model: FP8 parameters (fp8_param_gather) drop the bf16 weights and one copy") {
  // llama3-8b, tp 2, 32 layers on the rank: 32 x 109,051,904 linear weights (the case above).
  // With FP8 parameters each is 1 byte instead of 2 and only its column-wise copy (1 byte) stays:
  // 2 bytes less per linear weight, (2 - 1) in weights and 1 in the copies.
  const TransformerModel m = *builtin_model("llama3-8b");
  MemoryPlan p;
  p.tp = 2;
  p.seq = 4096;
  p.precision = Precision::fp8_current;
  p.distributed_optimizer = true;
  const MemoryEstimate cast = estimate_memory(m, p, with_memory(80e9));
  p.fp8_param_gather = true;
  const MemoryEstimate params = estimate_memory(m, p, with_memory(80e9));
  const double linear = 32.0 * 109'051'904;
  CHECK(cast.stages.at(0).weights - params.stages.at(0).weights == doctest::Approx(linear));
  CHECK(params.stages.at(0).quantized_weights == doctest::Approx(linear));
  CHECK(cast.peak_bytes - params.peak_bytes == doctest::Approx(2 * linear));
}
