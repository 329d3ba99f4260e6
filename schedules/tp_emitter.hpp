#pragma once
// The emission of one tensor-parallel linear layer on one rank (ARCHITECTURE.md §4.3), shared by
// build_tp_linear (one layer with tensor slots) and the training step (QKV, projection, MLP up
// and down, the output head; no slots): the GEMMs, the sequence-parallel all-gathers and
// reduce-scatters or the all-reduces, in the order and with the waits of Megatron's layers
// (seed 002): the column backward launches the input all-gather before the dX GEMM and the dX
// reduction before the dW GEMM, so both overlap under the single hardware queue.
//
// One rank's GEMM dimensions: Y [T, n] = X [T, k] W^T. Column: n = D_out / t, k = D_in; row:
// n = D_out, k = D_in / t. Every collective moves one whole [T, D] activation: T k e bytes for the
// column layer (X, dX), T n e for the row layer (Y, dY).
#include <cstdint>
#include <string>

#include "sim/program.hpp"

namespace meshsim {

// Transformer Engine's userbuffers overlap as Megatron-Core's --tp-comm-overlap runs it without
// --tp-comm-overlap-cfg: TE's default configuration per layer (transformer_engine/pytorch/module/
// base.py, initialize_ub's get_default_config): "ring_exchange" for qkv_fprop, fc1_fprop,
// proj_dgrad and fc2_dgrad (num_splits = tp, use_ce: copy-engine p2p taking no SMs,
// set_sm_margin off); "pipeline" for proj_fprop and fc2_fprop (num_splits 4, num_sm 16,
// set_sm_margin on); "bulk" for qkv_dgrad, qkv_wgrad, fc1_dgrad and fc1_wgrad (num_sm 16,
// set_sm_margin on). With set_sm_margin the GEMM runs on sm_count - num_sm SMs
// (comm_gemm_overlap.cpp, CommOverlapCore: _math_sms).
inline constexpr int kTpOverlapSplits = 4;    // "pipeline" num_splits
inline constexpr int kTpOverlapCommSms = 16;  // "pipeline" and "bulk" num_sm
// Megatron-Bridge's H100 FP8 configurations (src/megatron/bridge/training/comm_overlap.py,
// userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192 and _h16384_tp8_cp2_mbs1_seqlen8192):
// proj_fprop and fc2_fprop = RingExchangeOverlapCfg(num_sm=1, set_sm_margin=True).
inline constexpr int kTpOverlapRingRsSms = 1;

// The tensors one rank touches (all -1 when the Program has no tensors). When t = 1 the
// gathered/partial slots alias the local ones.
struct TpTensors {
  SlotId x = -1, x_total = -1, w = -1, b = -1, y_partial = -1, y = -1;
  SlotId dy = -1, dy_total = -1, dx_partial = -1, dx = -1, dw = -1, db = -1;
};

// The op names of one layer, in the host's words.
struct TpNames {
  std::string fwd_gemm, dgrad_gemm, wgrad_gemm, bias_add, bias_grad;
  std::string x_gather, x_gather_bwd, x_gather_wgrad, dy_gather;
  std::string y_reduce_scatter, y_all_reduce, dx_reduce_scatter, dx_all_reduce;
};

struct TpLayerSpec {
  bool column = true;
  std::int64_t tokens = 0;        // T: rows of the whole activation
  std::int64_t local_tokens = 0;  // rows outside the layer pair: T / t under SP, else T
  std::int64_t n = 0, k = 0;
  bool sequence_parallel = false;  // all-gather / reduce-scatter instead of all-reduce
  bool comm = false;               // t > 1
  bool bias = false;
  bool sync = false;        // the host waits right after launching each backward collective
  bool tensors = true;      // slots in kernel calls and collectives
  bool w_out_major = true;  // W stored [n, k] (PyTorch's [out, in]); false: [k, n]
  DType dtype = DType::bf16;
  // Low-precision linears (schedules/precision.hpp; without tensors only): the GEMMs' operands in
  // `quant`, each quantized by a cast (a `copy` with the format) before its GEMM — X in the
  // forward, dY in the backward (row- and column-wise: the dgrad and the wgrad GEMM each use one),
  // W when cast_weight; sequence-parallel all-gathers send the quantized tensor when
  // gather_quantized (else bf16, cast after the gather). none: every GEMM in dtype.
  QuantFormat quant = QuantFormat::none;
  bool amax_pass = false;        // an amax read of the tensor before each cast (current scaling)
  bool gather_quantized = true;  // SP all-gathers of X and dY send the quantized tensor
  bool cast_weight = false;      // this forward casts W (else TE's cached quantized copy)
  // W is an FP8 parameter (fp8_param_gather): the forward that would cast it builds its
  // column-wise transpose instead.
  bool fp8_weight = false;
  std::string what;  // the layer's name: its casts are "<what> x cast", ...
  // TE's userbuffers overlap of this layer (without tensors, sequence parallel only; the
  // kTpOverlap* configuration above): ring-exchanged all-gathers, the pipelined reduce-scatter,
  // bulk-overlapped column backward; ub_sm_share: the SMs left to a GEMM beside an SM-based
  // communication kernel, (sm_count - num_sm) / sm_count.
  bool ub_overlap = false;
  double ub_sm_share = 1.0;
  // The row forward's reduce-scatter as TE's ring exchange (split_overlap_rs of
  // CommOverlapP2PBase) instead of the pipeline; its chunk GEMMs run on ub_rs_ring_sm_share of
  // the SMs ((sm_count - 1) / sm_count: num_sm 1 with set_sm_margin).
  bool ub_rs_ring = false;
  double ub_rs_ring_sm_share = 1.0;
  int tp = 1;  // t: the ring's steps
};

class TpEmitHost {
 public:
  // A kernel on the compute stream; it waits for (and consumes) the pending waits.
  virtual OpId tp_kernel(std::string name, Phase phase, KernelCall call) = 0;
  // A collective of the TP group on its communication stream; -1 when the host has none to emit.
  virtual OpId tp_collective(std::string name, Phase phase, CollectiveKind kind, std::int64_t bytes,
                             SlotId in, SlotId out) = 0;
  // Makes the next kernel wait for op (ignored when op < 0).
  virtual void tp_wait(OpId op) = 0;
  // A userbuffers transfer of the TP group on its communication stream (TpLayerSpec::ub_overlap):
  // a permute to the next TP rank (one ring-exchange step), or an all-gather / reduce-scatter.
  // after_compute: it waits for the last compute kernel and the pending waits, as tp_collective;
  // else only for the transfer before it on the stream (TE's send waits for the last receive).
  // Hosts without TP overlap keep this default, which refuses.
  // shift: a permute's distance to the receiving TP rank (1: the next).
  virtual OpId tp_userbuffers(std::string name, Phase phase, CollectiveKind kind,
                              std::int64_t bytes, bool after_compute, int shift);

 protected:
  ~TpEmitHost() = default;
};

class TpLayerEmitter {
 public:
  explicit TpLayerEmitter(TpLayerSpec spec) : s_(spec) {}

  void forward(TpEmitHost& host, const TpTensors& t, const TpNames& names, Phase phase) const;
  // with_wgrad false: the B of a split backward (the dW GEMM comes in wgrad()).
  void backward(TpEmitHost& host, const TpTensors& t, const TpNames& names, bool with_wgrad) const;
  // The W of a split backward: the column layer gathers its input again under SP.
  void wgrad(TpEmitHost& host, const TpTensors& t, const TpNames& names) const;
  // An amax pass (amax_pass) and the cast of `elements` elements into `copies` quantized copies
  // (also the MoE experts' casts, whose grouped GEMMs have no TP layer).
  void quantize(TpEmitHost& host, const std::string& name, Phase phase, std::int64_t elements,
                std::int32_t copies) const;

 private:
  OpId gemm(TpEmitHost& host, const std::string& name, Phase phase, GemmShape shape,
            std::vector<SlotId> in, std::vector<SlotId> out, double sm_share = 1.0) const;
  // element_bytes > 0: the tensor is sent in a quantized format of that many bytes per element.
  OpId collective(TpEmitHost& host, const std::string& name, Phase phase, CollectiveKind kind,
                  SlotId in, SlotId out, double element_bytes = 0) const;
  OpId forward_gemm(TpEmitHost& host, const std::string& name, Phase phase, SlotId x, SlotId w,
                    SlotId y) const;
  void dgrad_gemm(TpEmitHost& host, const std::string& name, SlotId dy, SlotId w, SlotId dx,
                  double sm_share = 1.0) const;
  void wgrad_gemm(TpEmitHost& host, const std::string& name, SlotId dy, SlotId x, SlotId dw,
                  double sm_share = 1.0) const;
  void bias_op(TpEmitHost& host, const std::string& name, Phase phase, ElementwiseFn fn,
               std::int64_t rows, SlotId a, SlotId b, SlotId out) const;
  void column_backward(TpEmitHost& host, const TpTensors& t, const TpNames& names,
                       bool with_wgrad) const;
  void row_backward(TpEmitHost& host, const TpTensors& t, const TpNames& names,
                    bool with_wgrad) const;
  // ---- low-precision casts (tp_emitter_quant.cpp) ----
  bool quantized() const { return s_.quant != QuantFormat::none; }
  // Bytes per element of a saved X re-gathered for the weight gradient: the quantized format's
  // when TE gathers it quantized, else 0 (dtype).
  double gathered_bytes() const {
    return quantized() && s_.gather_quantized ? quant_element_bytes(s_.quant) : 0;
  }
  // The forward's cast of W (n x k, row- and column-wise) when cast_weight.
  void cast_weight(TpEmitHost& host, Phase phase) const;
  // A sequence-parallel all-gather of a [T, features] tensor whose T/t-row shard this rank holds,
  // quantized first (TE: with current scaling the shards' amaxes are all-reduced over the TP
  // group so that every shard uses one scale) or, when !gather_quantized, gathered in dtype and
  // cast after; returns the gather the next kernel must wait for (-1 when it already waited).
  OpId quantized_gather(TpEmitHost& host, const std::string& name, const std::string& gather_name,
                        Phase phase, std::int64_t features, std::int32_t copies) const;

  // ---- userbuffers overlap (tp_emitter_overlap.cpp) ----
  bool ring_overlap() const { return s_.ub_overlap && s_.sequence_parallel && s_.comm; }
  // AG+GEMM: the all-gather of a [T, features] tensor (`tensor_name`: "<what> x", "<what> dy")
  // as t - 1 ring-exchange steps beside t chunk GEMMs of T/t rows each (`chunk`: one chunk's
  // shape); quantized linears cast the shard first and exchange the quantized chunks.
  void ring_exchange_gemm(TpEmitHost& host, const std::string& gemm_name,
                          const std::string& tensor_name, Phase phase, std::int64_t features,
                          GemmShape chunk) const;
  // GEMM+RS: the forward GEMM in kTpOverlapSplits row chunks, each chunk's reduce-scatter beside
  // the next chunk's GEMM; the host waits for the last.
  void pipelined_reduce_scatter(TpEmitHost& host, const TpNames& names, Phase phase) const;
  // GEMM+RS as a ring exchange (ub_rs_ring): t chunk GEMMs of T/t rows, each chunk sent to the
  // rank that owns those rows while the next is computed, then one kernel summing the t partial
  // chunks; the host waits for it.
  void ring_reduce_scatter(TpEmitHost& host, const TpNames& names, Phase phase) const;
  // The T/t-row shard of a [T, features] tensor quantized before an all-gather: under current
  // scaling an amax pass and its TP all-reduce (max) so that every shard casts with one scale
  // (TE: with_amax_reduction over the TP group), then the cast into `copies` copies; returns the
  // bytes per element the gather then moves (dtype's, and nothing emitted, when not quantized).
  double quantize_shard_for_gather(TpEmitHost& host, const std::string& name, Phase phase,
                                   std::int64_t features, std::int32_t copies) const;
  // The column-wise (transposed) FP8 copy of an FP8 tensor of `elements` that Hopper's GEMMs read
  // (a gathered activation for the wgrad, an FP8 weight for the dgrad): one byte read and one
  // written per element.
  void transpose_fp8(TpEmitHost& host, const std::string& name, Phase phase,
                     std::int64_t elements) const;
  // A backward collective of the column layer: userbuffers (bulk overlap) or NCCL.
  OpId column_comm(TpEmitHost& host, const std::string& name, CollectiveKind kind, SlotId in,
                   SlotId out, double element_bytes = 0) const;
  double bulk_share() const { return ring_overlap() ? s_.ub_sm_share : 1.0; }

  TpLayerSpec s_;
};

}  // namespace meshsim
