// Transformer Engine's userbuffers TP communication overlap of one linear layer
// (TpLayerSpec::ub_overlap; the configuration in schedules/tp_emitter.hpp), as Megatron-Core runs
// it with --tp-comm-overlap and sequence parallelism:
// - AG+GEMM, "split pipelined ring exchange" (transformer_engine/common/comm_gemm_overlap/
//   comm_gemm_overlap.cpp, CommOverlapP2PBase::split_overlap_ag, not aggregated): step i of t
//   multiplies the T/t-row chunk present (the rank's own at i = 0) while the chunk is sent to the
//   next TP rank and the previous rank's arrives (userbuffers_send / userbuffers_recv, one
//   copy-engine copy of T/t rows); chunk i + 1's GEMM waits for that receive, the next send for
//   it too. Used by the column forward (qkv_fprop, fc1_fprop) and the row dgrad (proj_dgrad,
//   fc2_dgrad; dY's shards).
// - GEMM+RS, "pipeline" (CommOverlapBase::split_overlap_rs): the row forward GEMM (proj_fprop,
//   fc2_fprop) in 4 row chunks on sm_count - 16 SMs, each chunk reduce-scattered by TE's SM-based
//   userbuffers kernel while the next chunk's GEMM runs.
// - bulk (CommOverlapBase::bulk_overlap): the column backward's all-gather of X beside the dgrad
//   GEMM (qkv_dgrad, fc1_dgrad) and reduce-scatter of dX beside the wgrad GEMM (qkv_wgrad,
//   fc1_wgrad), as the NCCL path orders them, on userbuffers with the GEMMs on sm_count - 16 SMs.
// Every transfer is a userbuffers collective (CollectiveAlgo::userbuffers; its latency and
// bandwidth in sim/network_analytical.hpp); every chunk GEMM keeps its own shape, so the cost
// model's efficiency of a smaller GEMM prices the split.
#include <cmath>

#include <fmt/format.h>

#include "schedules/tp_emitter.hpp"
#include "sim/error.hpp"

namespace meshsim {

OpId TpEmitHost::tp_userbuffers(std::string name, Phase /*phase*/, CollectiveKind /*kind*/,
                                std::int64_t /*bytes*/, bool /*after_compute*/, int /*shift*/) {
  MESHSIM_CHECK(false, fmt::format("'{}': this builder emits no userbuffers transfers", name));
  return -1;
}

void TpLayerEmitter::ring_exchange_gemm(TpEmitHost& host, const std::string& gemm_name,
                                        const std::string& tensor_name, Phase phase,
                                        std::int64_t features, GemmShape chunk) const {
  MESHSIM_CHECK(!s_.tensors && s_.tp > 1 && s_.local_tokens * s_.tp == s_.tokens,
                "a ring-exchanged TP layer without tensors, T/t rows per chunk");
  const double element_bytes = quantize_shard_for_gather(host, tensor_name, phase, features, 1);
  const auto bytes = std::llround(static_cast<double>(s_.local_tokens * features) * element_bytes);
  OpId received = -1;
  for (int i = 0; i < s_.tp; ++i) {
    // Step i's exchange is issued before its GEMM: at i = 0 after the kernel producing the shard,
    // later only behind the previous exchange on the stream.
    const OpId sent = i + 1 < s_.tp
                          ? host.tp_userbuffers(fmt::format("{} ring exchange {}", tensor_name, i),
                                                phase, CollectiveKind::permute, bytes, i == 0, 1)
                          : -1;
    host.tp_wait(received);
    gemm(host, fmt::format("{} {}", gemm_name, i), phase, chunk, {}, {});
    received = sent;
  }
  // The row layer's dY: Hopper's wgrad GEMM reads the gathered FP8 tensor column-wise, and TE
  // transposes it after the gather (the shards were cast row-wise only). The column layer's X is
  // gathered again in the backward for its wgrad (column_backward).
  if (quantized() && !s_.column) {
    transpose_fp8(host, tensor_name, phase, s_.tokens * features);
  }
}

void TpLayerEmitter::pipelined_reduce_scatter(TpEmitHost& host, const TpNames& names,
                                              Phase phase) const {
  MESHSIM_CHECK(!s_.tensors && s_.tokens % kTpOverlapSplits == 0,
                "a pipelined reduce-scatter without tensors over whole row chunks");
  const std::int64_t rows = s_.tokens / kTpOverlapSplits;
  const std::int64_t bytes = rows * s_.n * dtype_bytes(s_.dtype);
  OpId scatter = -1;
  for (int j = 0; j < kTpOverlapSplits; ++j) {
    gemm(host, fmt::format("{} {}", names.fwd_gemm, j), phase,
         GemmShape{rows, s_.n, s_.k, false, s_.w_out_major, false}, {}, {}, s_.ub_sm_share);
    scatter = host.tp_userbuffers(fmt::format("{} {}", names.y_reduce_scatter, j), phase,
                                  CollectiveKind::reduce_scatter, bytes, true, 1);
  }
  // The chunks' reduce-scatters run in stream order: the last done, all are.
  host.tp_wait(scatter);
}

// TE's CommOverlapP2PBase::split_overlap_rs (transformer_engine/common/comm_gemm_overlap/
// comm_gemm_overlap.cpp): GEMM i computes the T/t output rows that TP rank r + i + 1 owns, into
// userbuffer chunk i; after GEMM i the chunk is sent i + 1 ranks on (the receiver pulls it with
// the copy engine) while GEMM i + 1 runs; the last GEMM computes the rank's own rows; then
// reduce_bf16 reads the t partial chunks and writes their sum (userbuffers.cu: fp32
// accumulation, dtype out). The GEMMs run on sm_count - num_sm (1) SMs.
void TpLayerEmitter::ring_reduce_scatter(TpEmitHost& host, const TpNames& names,
                                         Phase phase) const {
  MESHSIM_CHECK(!s_.tensors && s_.tp > 1 && s_.local_tokens * s_.tp == s_.tokens,
                "a ring-exchanged reduce-scatter without tensors, T/t rows per chunk");
  const std::int64_t rows = s_.local_tokens;
  const std::int64_t bytes = rows * s_.n * dtype_bytes(s_.dtype);
  OpId sent = -1;
  for (int i = 0; i < s_.tp; ++i) {
    gemm(host, fmt::format("{} {}", names.fwd_gemm, i), phase,
         GemmShape{rows, s_.n, s_.k, false, s_.w_out_major, false}, {}, {}, s_.ub_rs_ring_sm_share);
    if (i + 1 < s_.tp) {
      sent = host.tp_userbuffers(fmt::format("{} {}", names.y_reduce_scatter, i), phase,
                                 CollectiveKind::permute, bytes, true, i + 1);
    }
  }
  host.tp_wait(sent);  // the chunks arrive in stream order: the last received, all are
  host.tp_kernel(names.y_reduce_scatter + " sum", phase,
                 KernelCall{KernelKind::elementwise,
                            s_.dtype,
                            VectorShape{rows * s_.n, static_cast<std::int32_t>(s_.tp) + 1},
                            {},
                            {}});
}

OpId TpLayerEmitter::column_comm(TpEmitHost& host, const std::string& name, CollectiveKind kind,
                                 SlotId in, SlotId out, double element_bytes) const {
  if (!ring_overlap()) return collective(host, name, Phase::bwd, kind, in, out, element_bytes);
  const double e = element_bytes > 0 ? element_bytes : static_cast<double>(dtype_bytes(s_.dtype));
  return host.tp_userbuffers(name, Phase::bwd, kind,
                             std::llround(static_cast<double>(s_.tokens * s_.k) * e), true, 1);
}

}  // namespace meshsim
