#pragma once
// Tensor-parallel linear layers, ARCHITECTURE.md §4.3 (seed 002, Megatron/nanotron semantics): the
// forward and backward of one column- or row-parallel linear layer Y = X W^T (+ b) over t ranks,
// with or without sequence parallelism, the collectives issued in the order and with the waits of
// the reference code, so that what the overlap hides — or, without the single hardware queue, fails
// to hide — shows in the timeline.
//
// Notation: T tokens (sequence x microbatch), D_in and D_out features, t ranks, e bytes per
// element. W is [D_out, D_in] (PyTorch's layout).
//
//   column: W split by output features (W_r is [D_out/t, D_in]); Y_r = X W_r^T is [T, D_out/t].
//   row:    W split by input features (W_r is [D_out, D_in/t]); X_r is [T, D_in/t] and the
//           partial products X_r W_r^T are summed over the ranks.
//
//   mode allreduce (no sequence parallelism): X and Y are whole on every rank.
//   mode reducescatter (sequence parallelism): activations outside the layer pair are split by
//           tokens, T/t rows per rank; column all-gathers its input, row reduce-scatters its
//           output.
#include <cstdint>
#include <optional>
#include <string_view>

#include "sim/dtype.hpp"
#include "sim/program.hpp"

namespace meshsim {

enum class TpLinearKind : std::uint8_t { column, row };
enum class TpMode : std::uint8_t { all_reduce, reduce_scatter };
enum class TpOverlap : std::uint8_t { async, sync };
enum class TpPass : std::uint8_t { fwd, bwd, fwd_bwd };

std::string_view to_string(TpLinearKind k);
std::string_view to_string(TpMode m);
std::string_view to_string(TpOverlap o);
std::string_view to_string(TpPass p);
std::optional<TpLinearKind> parse_tp_linear_kind(std::string_view s);
std::optional<TpMode> parse_tp_mode(std::string_view s);
std::optional<TpOverlap> parse_tp_overlap(std::string_view s);
std::optional<TpPass> parse_tp_pass(std::string_view s);

struct TpLinearConfig {
  int tp = 8;
  std::int64_t tokens = 8192;  // rows of X: sequence x microbatch (8192 x 1)
  std::int64_t in_features = 8192;
  std::int64_t out_features = 28672;  // an MLP up-projection (Llama 3 70B)
  TpLinearKind kind = TpLinearKind::column;
  TpMode mode = TpMode::reduce_scatter;
  // async: the collective of the column backward runs while the weight-gradient GEMM computes
  // (seed 002); sync: the host waits right after launching it. The row layer has nothing to
  // overlap: its collectives are on the critical path either way.
  TpOverlap overlap = TpOverlap::async;
  TpPass pass = TpPass::fwd_bwd;
  DType dtype = DType::bf16;
  bool bias = false;  // Llama's linear layers have none
  int gpus_per_node = 8;
  bool single_queue = true;  // CUDA_DEVICE_MAX_CONNECTIONS=1 (the default when TP > 1)
};

// Throws InputError naming the option (by its CLI flag) when the configuration is impossible.
void check_config(const TpLinearConfig& config);

// Bytes of each collective (the nccl-tests convention of CollectiveCall: the per-rank buffer for
// all-reduce, the gathered total for all-gather and reduce-scatter). Every collective of the
// layer moves a whole [T, D] activation: D = D_in for the column layer's X and dX, D = D_out for
// the row layer's Y and dY.
std::int64_t tp_collective_bytes(const TpLinearConfig& config);

// One rank's ops, in launch order (streams "compute" and "tp_comm"; "+b" only with a bias, the
// bracketed collectives only when t > 1; "wait c" makes the next compute depend on c; every
// collective also waits for the last compute launched before it, as PyTorch's NCCL stream waits
// for the current stream):
//
//   column allreduce   fwd: gemm Y = X W^T, +b
//                      bwd: gemm dX = dY W, [all-reduce dX], +db, gemm dW += dY^T X, wait
//                           (sync: wait right after the all-reduce)
//   column reducescat. fwd: [all-gather X], wait, gemm, +b
//                      bwd: [all-gather X (recomputed)], gemm dX = dY W, [reduce-scatter dX],
//                           +db, wait all-gather, gemm dW += dY^T X_total, wait reduce-scatter
//                           (sync: wait right after each launch)
//   row allreduce      fwd: gemm, [all-reduce Y], wait, +b      bwd: gemm dX, gemm dW, +db
//   row reducescatter  fwd: gemm, [reduce-scatter Y], wait, +b
//                      bwd: [all-gather dY], wait, gemm dX, gemm dW, +db
//
// With --pass fwd+bwd the backward follows the forward, its first compute waiting for the
// forward's output (standing in for the rest of the model and the loss). The bias add and the
// bias gradient (db += dY summed over its T rows; the row layer sums the whole, gathered dY, so
// db is complete without a collective) are elementwise kernels. Weight and bias gradients
// accumulate into fp32 slots (Megatron's main_grad).
Program build_tp_linear(const TpLinearConfig& config);

}  // namespace meshsim
