#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "schedules/tp_emitter.hpp"
#include "tests/schedules/recording_tp_host.hpp"

using namespace meshsim;

namespace {

using test::kNames;
using test::RecordingHost;

// T = 1024 tokens over t = 4 TP ranks (256 local under SP), n = 512, k = 2048.
TpLayerSpec spec(bool column, bool sp, QuantFormat quant, bool amax, bool gather_quantized) {
  TpLayerSpec s;
  s.column = column;
  s.tokens = 1024;
  s.local_tokens = sp ? 256 : 1024;
  s.n = 512;
  s.k = 2048;
  s.sequence_parallel = sp;
  s.comm = true;
  s.tensors = false;
  s.quant = quant;
  s.amax_pass = amax;
  s.gather_quantized = gather_quantized;
  s.cast_weight = true;
  s.what = std::string("l");  // (not = "l": GCC 12 reports a false -Wrestrict)
  return s;
}

}  // namespace

TEST_CASE(
    "quantized column forward, current scaling, SP: amax, TP amax all-reduce, cast, FP8 gather") {
  RecordingHost h;
  TpLayerEmitter(spec(true, true, QuantFormat::fp8, true, true)).forward(h, {}, kNames, Phase::fwd);
  CHECK(h.names() == std::vector<std::string>{"l w amax", "l w cast", "l x amax",
                                              "l x amax all-reduce", "l x cast", "xg", "fwd"});
  // W [n, k] read in bf16 and written row- and column-wise in FP8: n k (2 + 1 + 1) bytes.
  CHECK(h.named("l w cast").kernel_bytes == 512.0 * 2048 * 4);
  // The local shard T/t x k: read 2, written row- and column-wise (the columns kept for dW).
  CHECK(h.named("l x cast").kernel_bytes == 256.0 * 2048 * 4);
  CHECK(h.named("l x amax").kernel_bytes == 256.0 * 2048 * 2);  // one bf16 read
  CHECK(h.named("l x amax all-reduce").bytes == 4);             // one fp32 amax
  // The all-gather moves the whole [T, k] activation at 1 byte per element (bf16: 2).
  CHECK(h.named("xg").bytes == 1024 * 2048);
  CHECK(h.named("fwd").quant == QuantFormat::fp8);
  CHECK(h.named("fwd").waits == std::vector<OpId>{5});  // the GEMM waits for the gather
}

TEST_CASE("quantized forward, delayed scaling, cached weight: only the input cast") {
  RecordingHost h;
  TpLayerSpec s = spec(false, true, QuantFormat::fp8, false, true);
  s.cast_weight = false;  // not the step's first microbatch: TE reuses the cached FP8 weight
  TpLayerEmitter(s).forward(h, {}, kNames, Phase::fwd);
  // The row layer casts its whole [T, k] input; its output reduce-scatter stays bf16 (2 bytes).
  CHECK(h.names() == std::vector<std::string>{"l x cast", "fwd", "y rs"});
  CHECK(h.named("y rs").bytes == 1024 * 512 * 2);
}

TEST_CASE(
    "blockwise FP8 gathers in bf16 and casts the gathered tensor (TE's high-precision gather)") {
  RecordingHost h;
  TpLayerEmitter(spec(true, true, QuantFormat::fp8_block, false, false))
      .forward(h, {}, kNames, Phase::fwd);
  CHECK(h.names() == std::vector<std::string>{"l w cast", "xg", "l x cast", "fwd"});
  CHECK(h.named("xg").bytes == 1024 * 2048 * 2);
  // The whole [T, k]: read 2 bytes, write 2 copies of 1 + 4/128 bytes.
  CHECK(h.named("l x cast").kernel_bytes == doctest::Approx(1024.0 * 2048 * (2 + 2 * 1.03125)));
}

TEST_CASE("quantized backward: dY cast before the dgrad, the saved X re-gathered in FP8") {
  RecordingHost h;
  TpLayerEmitter(spec(true, true, QuantFormat::mxfp8, false, true)).backward(h, {}, kNames, true);
  CHECK(h.names() == std::vector<std::string>{"l dy cast", "xg bwd", "dgrad", "dx rs", "wgrad"});
  // [T, k] at 1 + 1/32 bytes: 1024 x 2048 x 1.03125.
  CHECK(h.named("xg bwd").bytes == std::llround(1024.0 * 2048 * 1.03125));
  CHECK(h.named("dx rs").bytes == 1024 * 2048 * 2);  // the input gradient stays bf16
  CHECK(h.named("dgrad").quant == QuantFormat::mxfp8);
  CHECK(h.named("wgrad").quant == QuantFormat::mxfp8);

  RecordingHost row;
  TpLayerEmitter(spec(false, true, QuantFormat::fp8, true, true)).backward(row, {}, kNames, true);
  // Row layer under SP: dY's T/t-row shard gets its amax, the TP amax all-reduce, its cast, and
  // the FP8 all-gather of [T, n] before the dgrad.
  CHECK(row.names() == std::vector<std::string>{"l dy amax", "l dy amax all-reduce", "l dy cast",
                                                "dyg", "dgrad", "wgrad"});
  CHECK(row.named("dyg").bytes == 1024 * 512);
  CHECK(row.named("dgrad").waits == std::vector<OpId>{3});
}

TEST_CASE("an unquantized layer emits what it did before (no casts, bf16 gathers)") {
  RecordingHost h;
  TpLayerEmitter(spec(true, true, QuantFormat::none, false, true))
      .forward(h, {}, kNames, Phase::fwd);
  CHECK(h.names() == std::vector<std::string>{"xg", "fwd"});
  CHECK(h.named("xg").bytes == 1024 * 2048 * 2);
}
