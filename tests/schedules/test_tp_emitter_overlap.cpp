// Transformer Engine's userbuffers overlap of one TP layer (schedules/tp_emitter_overlap.cpp):
// the ops, their order, waits, shapes and bytes, with the layer of the other emitter tests.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "schedules/tp_emitter.hpp"
#include "tests/schedules/recording_tp_host.hpp"

using namespace meshsim;

namespace {

using test::kNames;
using test::RecordingHost;

// H100 SXM5: 132 SMs, TE's "pipeline" / "bulk" num_sm 16: GEMMs beside them on 116.
constexpr double kShare = 116.0 / 132.0;

// T = 1024 tokens over t = 4 TP ranks (256 local under SP), n = 512, k = 2048, bf16.
TpLayerSpec spec(bool column) {
  TpLayerSpec s;
  s.column = column;
  s.tokens = 1024;
  s.local_tokens = 256;
  s.n = 512;
  s.k = 2048;
  s.sequence_parallel = true;
  s.comm = true;
  s.tensors = false;
  s.what = std::string("l");
  s.ub_overlap = true;
  s.ub_sm_share = kShare;
  s.tp = 4;
  return s;
}

}  // namespace

TEST_CASE("overlap: the column forward all-gather as t - 1 ring exchanges beside t chunk GEMMs") {
  RecordingHost h;
  TpLayerEmitter(spec(true)).forward(h, {}, kNames, Phase::fwd);
  CHECK(h.names() == std::vector<std::string>{"l x ring exchange 0", "fwd 0", "l x ring exchange 1",
                                              "fwd 1", "l x ring exchange 2", "fwd 2", "fwd 3"});
  for (int i = 0; i < 3; ++i) {
    const auto& ex = h.named("l x ring exchange " + std::to_string(i));
    CHECK(ex.userbuffers);
    CHECK(ex.kind == CollectiveKind::permute);
    CHECK(ex.bytes == 256 * 2048 * 2);    // one T/t-row shard of X [T, k] in bf16
    CHECK(ex.after_compute == (i == 0));  // only the first waits for X's producer
  }
  // Each chunk: Y [T/t, n] = X chunk [T/t, k] W^T, on all SMs (copy-engine p2p takes none).
  for (int i = 0; i < 4; ++i) {
    const auto& g = h.named("fwd " + std::to_string(i));
    CHECK(g.gemm == GemmShape{256, 512, 2048, false, true, false});
    CHECK(g.sm_share == 1.0);
  }
  CHECK(h.named("fwd 0").waits.empty());                  // the rank's own shard
  CHECK(h.named("fwd 1").waits == std::vector<OpId>{0});  // received by exchange 0
  CHECK(h.named("fwd 3").waits == std::vector<OpId>{4});  // received by exchange 2
}

TEST_CASE("overlap: the row forward reduce-scatter pipelined over 4 chunk GEMMs on 116 SMs") {
  RecordingHost h;
  TpLayerEmitter(spec(false)).forward(h, {}, kNames, Phase::fwd);
  CHECK(h.names() == std::vector<std::string>{"fwd 0", "y rs 0", "fwd 1", "y rs 1", "fwd 2",
                                              "y rs 2", "fwd 3", "y rs 3"});
  for (int j = 0; j < 4; ++j) {
    const auto& g = h.named("fwd " + std::to_string(j));
    CHECK(g.gemm == GemmShape{256, 512, 2048, false, true, false});  // T/4 rows
    CHECK(g.sm_share == doctest::Approx(kShare));
    const auto& rs = h.named("y rs " + std::to_string(j));
    CHECK(rs.userbuffers);
    CHECK(rs.kind == CollectiveKind::reduce_scatter);
    CHECK(rs.after_compute);           // behind its chunk's GEMM
    CHECK(rs.bytes == 256 * 512 * 2);  // the chunk's [T/4, n] partial sums, bf16
  }
  // Together the chunks move the unsplit reduce-scatter's [T, n]: 4 x 256 x 512 x 2 bytes.
  CHECK(h.pending == std::vector<OpId>{7});  // what runs next waits for the last chunk's
}

TEST_CASE("overlap: the row backward gathers dY by ring exchange beside the dgrad chunks") {
  RecordingHost h;
  TpLayerEmitter(spec(false)).backward(h, {}, kNames, true);
  CHECK(h.names() ==
        std::vector<std::string>{"l dy ring exchange 0", "dgrad 0", "l dy ring exchange 1",
                                 "dgrad 1", "l dy ring exchange 2", "dgrad 2", "dgrad 3", "wgrad"});
  CHECK(h.named("l dy ring exchange 1").bytes == 256 * 512 * 2);  // a [T/t, n] dY shard
  // dX chunk [T/t, k] = dY chunk [T/t, n] W.
  CHECK(h.named("dgrad 2").gemm == GemmShape{256, 2048, 512, false, false, false});
  CHECK(h.named("dgrad 2").waits == std::vector<OpId>{2});
  // The weight gradient reads the whole gathered dY: dW [n, k] = dY^T X over T rows.
  CHECK(h.named("wgrad").gemm == GemmShape{512, 2048, 1024, true, false, true});
  CHECK(h.named("wgrad").sm_share == 1.0);
}

TEST_CASE("overlap: the column backward's collectives as userbuffers bulk overlaps") {
  RecordingHost h;
  TpLayerEmitter(spec(true)).backward(h, {}, kNames, true);
  CHECK(h.names() == std::vector<std::string>{"xg bwd", "dgrad", "dx rs", "wgrad"});
  CHECK(h.named("xg bwd").userbuffers);
  CHECK(h.named("xg bwd").kind == CollectiveKind::all_gather);
  CHECK(h.named("xg bwd").bytes == 1024 * 2048 * 2);  // X [T, k] in bf16, as the NCCL gather
  CHECK(h.named("dx rs").kind == CollectiveKind::reduce_scatter);
  CHECK(h.named("dx rs").bytes == 1024 * 2048 * 2);
  // Both GEMMs run beside TE's SM-based bulk kernels on 116 of 132 SMs.
  CHECK(h.named("dgrad").sm_share == doctest::Approx(kShare));
  CHECK(h.named("wgrad").sm_share == doctest::Approx(kShare));
  CHECK(h.named("wgrad").waits == std::vector<OpId>{0});  // dW waits for the gathered X
  CHECK(h.pending == std::vector<OpId>{2});               // what runs next waits for dX
}

TEST_CASE("overlap off: the same layer emits the NCCL collectives and whole GEMMs") {
  RecordingHost h;
  TpLayerSpec s = spec(true);
  s.ub_overlap = false;
  TpLayerEmitter(s).forward(h, {}, kNames, Phase::fwd);
  CHECK(h.names() == std::vector<std::string>{"xg", "fwd"});
  CHECK_FALSE(h.named("xg").userbuffers);
  CHECK(h.named("fwd").gemm == GemmShape{1024, 512, 2048, false, true, false});
}

TEST_CASE("overlap: the row forward reduce-scatter as a ring exchange of t chunks (TE P2P)") {
  TpLayerSpec sp = spec(false);
  sp.ub_rs_ring = true;
  sp.ub_rs_ring_sm_share = 131.0 / 132.0;  // num_sm 1 with set_sm_margin
  RecordingHost h;
  TpLayerEmitter(sp).forward(h, {}, kNames, Phase::fwd);
  CHECK(h.names() == std::vector<std::string>{"fwd 0", "y rs 0", "fwd 1", "y rs 1", "fwd 2",
                                              "y rs 2", "fwd 3", "y rs sum"});
  for (int i = 0; i < 4; ++i) {
    const auto& g = h.named("fwd " + std::to_string(i));
    CHECK(g.gemm == GemmShape{256, 512, 2048, false, true, false});  // T/t rows
    CHECK(g.sm_share == doctest::Approx(131.0 / 132.0));
  }
  for (int i = 0; i < 3; ++i) {
    const auto& send = h.named("y rs " + std::to_string(i));
    CHECK(send.userbuffers);
    CHECK(send.kind == CollectiveKind::permute);
    CHECK(send.shift == i + 1);          // chunk i belongs to the rank i + 1 on
    CHECK(send.after_compute);           // behind its chunk's GEMM
    CHECK(send.bytes == 256 * 512 * 2);  // one [T/t, n] chunk of partial sums, bf16
  }
  // The sum waits for the last receive and reads the t = 4 partial chunks, writing one:
  // (4 + 1) x 256 x 512 x 2 bytes.
  const auto& sum = h.named("y rs sum");
  CHECK(sum.waits == std::vector<OpId>{5});
  CHECK(sum.kernel_bytes == doctest::Approx(5.0 * 256 * 512 * 2));
}

TEST_CASE("overlap with FP8 linears: shards cast before the ring exchanges, which move FP8") {
  // Current scaling: amax of the shard, its TP all-reduce, one row-wise cast; the ring moves
  // 1-byte elements (E4M3, one scale per tensor); the chunk GEMMs run in FP8.
  TpLayerSpec sc = spec(true);
  sc.quant = QuantFormat::fp8;
  sc.amax_pass = true;
  RecordingHost h;
  TpLayerEmitter(sc).forward(h, {}, kNames, Phase::fwd);
  CHECK(h.names() == std::vector<std::string>{"l x amax", "l x amax all-reduce", "l x cast",
                                              "l x ring exchange 0", "fwd 0", "l x ring exchange 1",
                                              "fwd 1", "l x ring exchange 2", "fwd 2", "fwd 3"});
  CHECK(h.named("l x amax all-reduce").bytes == 4);          // one fp32 amax
  CHECK(h.named("l x cast").waits == std::vector<OpId>{1});  // after the shared amax
  // The cast reads the bf16 shard and writes one FP8 copy: 256 x 2048 x (2 + 1) bytes.
  CHECK(h.named("l x cast").kernel_bytes == doctest::Approx(256.0 * 2048 * 3));
  CHECK(h.named("l x ring exchange 0").bytes == 256 * 2048);  // FP8: half the bf16 shard
  CHECK(h.named("l x ring exchange 0").after_compute);        // behind the cast
  CHECK(h.named("fwd 2").quant == QuantFormat::fp8);

  // The row backward: dY's shards cast and exchanged in FP8, then the gathered dY transposed
  // for the wgrad GEMM (one byte in, one out per element: 1024 x 512 x 2).
  TpLayerSpec sr = spec(false);
  sr.quant = QuantFormat::fp8;
  RecordingHost b;
  TpLayerEmitter(sr).backward(b, {}, kNames, true);
  CHECK(b.names() == std::vector<std::string>{"l dy cast", "l dy ring exchange 0", "dgrad 0",
                                              "l dy ring exchange 1", "dgrad 1",
                                              "l dy ring exchange 2", "dgrad 2", "dgrad 3",
                                              "l dy transpose", "wgrad"});
  CHECK(b.named("l dy ring exchange 1").bytes == 256 * 512);
  CHECK(b.named("l dy transpose").kernel_bytes == doctest::Approx(1024.0 * 512 * 2));

  // The column backward gathers the saved FP8 X (bulk) and transposes it before the wgrad.
  RecordingHost c;
  TpLayerEmitter(sc).backward(c, {}, kNames, true);
  CHECK(c.named("xg bwd").bytes == 1024 * 2048);  // [T, k] in FP8
  CHECK(c.named("l x transpose").kernel_bytes == doctest::Approx(1024.0 * 2048 * 2));
}
