#include "schedules/tp_emitter.hpp"

#include <cmath>

namespace meshsim {

OpId TpLayerEmitter::gemm(TpEmitHost& host, const std::string& name, Phase phase, GemmShape shape,
                          std::vector<SlotId> in, std::vector<SlotId> out, double sm_share) const {
  if (!s_.tensors) {
    in.clear();
    out.clear();
  }
  KernelCall call{KernelKind::gemm, s_.dtype, shape, std::move(in), std::move(out)};
  call.quant = s_.quant;
  call.sm_share = sm_share;
  return host.tp_kernel(name, phase, std::move(call));
}

OpId TpLayerEmitter::collective(TpEmitHost& host, const std::string& name, Phase phase,
                                CollectiveKind kind, SlotId in, SlotId out,
                                double element_bytes) const {
  const std::int64_t features = s_.column ? s_.k : s_.n;
  const std::int64_t bytes =
      element_bytes > 0 ? std::llround(static_cast<double>(s_.tokens * features) * element_bytes)
                        : s_.tokens * features * dtype_bytes(s_.dtype);
  return host.tp_collective(name, phase, kind, bytes, s_.tensors ? in : -1, s_.tensors ? out : -1);
}

// Y [T, n] = X [T, k] W^T (W stored [n, k]) or X W (W stored [k, n]).
OpId TpLayerEmitter::forward_gemm(TpEmitHost& host, const std::string& name, Phase phase, SlotId x,
                                  SlotId w, SlotId y) const {
  return gemm(host, name, phase, GemmShape{s_.tokens, s_.n, s_.k, false, s_.w_out_major, false},
              {x, w}, {y});
}

// dX [T, k] = dY [T, n] W (W stored [n, k]) or dY W^T (W stored [k, n]).
void TpLayerEmitter::dgrad_gemm(TpEmitHost& host, const std::string& name, SlotId dy, SlotId w,
                                SlotId dx, double sm_share) const {
  gemm(host, name, Phase::bwd, GemmShape{s_.tokens, s_.k, s_.n, false, !s_.w_out_major, false},
       {dy, w}, {dx}, sm_share);
}

// dW [n, k] += dY^T [n, T] X [T, k], accumulated into the fp32 main grad.
void TpLayerEmitter::wgrad_gemm(TpEmitHost& host, const std::string& name, SlotId dy, SlotId x,
                                SlotId dw, double sm_share) const {
  gemm(host, name, Phase::wgrad, GemmShape{s_.n, s_.k, s_.tokens, true, false, true}, {dy, x, dw},
       {dw}, sm_share);
}

// bias add: Y[i, :] += b over rows x n elements; bias grad: db += the sum of dY's rows.
void TpLayerEmitter::bias_op(TpEmitHost& host, const std::string& name, Phase phase,
                             ElementwiseFn fn, std::int64_t rows, SlotId a, SlotId b,
                             SlotId out) const {
  if (!s_.bias) return;
  std::vector<SlotId> in{a, b}, outs{out};
  if (!s_.tensors) {
    in.clear();
    outs.clear();
  }
  host.tp_kernel(name, phase,
                 KernelCall{KernelKind::elementwise, s_.dtype, VectorShape{rows * s_.n},
                            std::move(in), std::move(outs), fn});
}

void TpLayerEmitter::forward(TpEmitHost& host, const TpTensors& t, const TpNames& names,
                             Phase phase) const {
  const bool sp = s_.sequence_parallel && s_.comm;
  cast_weight(host, phase);
  if (s_.column) {
    // The forward needs all of X: gather the T/t-row shards, then wait.
    if (ring_overlap()) {
      ring_exchange_gemm(host, names.fwd_gemm, s_.what + " x", phase, s_.k,
                         GemmShape{s_.local_tokens, s_.n, s_.k, false, s_.w_out_major, false});
      bias_op(host, names.bias_add, phase, ElementwiseFn::bias_add, s_.tokens, t.y, t.b, t.y);
      return;
    }
    if (sp && quantized()) {
      host.tp_wait(quantized_gather(host, s_.what + " x", names.x_gather, phase, s_.k, 2));
    } else if (sp) {
      host.tp_wait(
          collective(host, names.x_gather, phase, CollectiveKind::all_gather, t.x, t.x_total));
    } else if (quantized()) {
      quantize(host, s_.what + " x", phase, s_.tokens * s_.k, 2);
    }
    forward_gemm(host, names.fwd_gemm, phase, t.x_total, t.w, t.y);
    bias_op(host, names.bias_add, phase, ElementwiseFn::bias_add, s_.tokens, t.y, t.b, t.y);
    return;
  }
  if (quantized()) quantize(host, s_.what + " x", phase, s_.tokens * s_.k, 2);
  if (ring_overlap() && s_.ub_rs_ring) {
    ring_reduce_scatter(host, names, phase);
  } else if (ring_overlap()) {
    pipelined_reduce_scatter(host, names, phase);
  } else {
    forward_gemm(host, names.fwd_gemm, phase, t.x, t.w, t.y_partial);
  }
  if (s_.comm && !ring_overlap()) {
    // Sum the partial products: on the critical path, the host waits.
    host.tp_wait(sp ? collective(host, names.y_reduce_scatter, phase,
                                 CollectiveKind::reduce_scatter, t.y_partial, t.y)
                    : collective(host, names.y_all_reduce, phase, CollectiveKind::all_reduce,
                                 t.y_partial, t.y));
  }
  bias_op(host, names.bias_add, phase, ElementwiseFn::bias_add, s_.local_tokens, t.y, t.b, t.y);
}

void TpLayerEmitter::backward(TpEmitHost& host, const TpTensors& t, const TpNames& names,
                              bool with_wgrad) const {
  if (s_.column) {
    column_backward(host, t, names, with_wgrad);
  } else {
    row_backward(host, t, names, with_wgrad);
  }
}

// The input all-gather (recomputed, not stored) is launched before the dX GEMM, which does not
// need it; the dX collective before dW, which runs while it transfers.
void TpLayerEmitter::column_backward(TpEmitHost& host, const TpTensors& t, const TpNames& names,
                                     bool with_wgrad) const {
  const bool sp = s_.sequence_parallel && s_.comm;
  // dY in the quantized format, row-wise for the dgrad and column-wise for the wgrad GEMM.
  if (quantized()) quantize(host, s_.what + " dy", Phase::bwd, s_.tokens * s_.n, 2);
  OpId gather = -1;
  if (sp && with_wgrad) {
    // The saved quantized X shards (or bf16 ones, cast again below, when TE gathers in bf16).
    gather = column_comm(host, names.x_gather_bwd, CollectiveKind::all_gather, t.x, t.x_total,
                         gathered_bytes());
    if (s_.sync) host.tp_wait(gather);
  }
  dgrad_gemm(host, names.dgrad_gemm, t.dy, t.w, t.dx_partial, gather >= 0 ? bulk_share() : 1.0);
  OpId reduce = -1;
  if (s_.comm) {
    reduce = sp ? column_comm(host, names.dx_reduce_scatter, CollectiveKind::reduce_scatter,
                              t.dx_partial, t.dx)
                : collective(host, names.dx_all_reduce, Phase::bwd, CollectiveKind::all_reduce,
                             t.dx_partial, t.dx);
    if (s_.sync) host.tp_wait(reduce);
  }
  if (with_wgrad) {
    bias_op(host, names.bias_grad, Phase::wgrad, ElementwiseFn::bias_grad, s_.tokens, t.dy_total,
            t.db, t.db);
    if (!s_.sync) host.tp_wait(gather);  // dW needs the gathered X
    if (sp && quantized() && !s_.gather_quantized) {
      quantize(host, s_.what + " x", Phase::bwd, s_.tokens * s_.k, 1);
    } else if (ring_overlap() && quantized()) {
      transpose_fp8(host, s_.what + " x", Phase::bwd, s_.tokens * s_.k);  // cast row-wise only
    }
    wgrad_gemm(host, names.wgrad_gemm, t.dy_total, t.x_total, t.dw,
               reduce >= 0 ? bulk_share() : 1.0);
  }
  if (!s_.sync) host.tp_wait(reduce);  // dX is complete for whatever runs next
}

void TpLayerEmitter::row_backward(TpEmitHost& host, const TpTensors& t, const TpNames& names,
                                  bool with_wgrad) const {
  const bool sp = s_.sequence_parallel && s_.comm;
  if (ring_overlap()) {
    // dX [T, k] = dY [T, n] W in T/t-row chunks as dY's shards arrive.
    ring_exchange_gemm(host, names.dgrad_gemm, s_.what + " dy", Phase::bwd, s_.n,
                       GemmShape{s_.local_tokens, s_.k, s_.n, false, !s_.w_out_major, false});
  } else if (sp && quantized()) {
    host.tp_wait(quantized_gather(host, s_.what + " dy", names.dy_gather, Phase::bwd, s_.n, 2));
  } else if (sp) {
    // The backward of the reduce-scatter: gather dY's T/t-row shards before anything uses it.
    host.tp_wait(collective(host, names.dy_gather, Phase::bwd, CollectiveKind::all_gather, t.dy,
                            t.dy_total));
  } else if (quantized()) {
    quantize(host, s_.what + " dy", Phase::bwd, s_.tokens * s_.n, 2);
  }
  if (!ring_overlap()) dgrad_gemm(host, names.dgrad_gemm, t.dy_total, t.w, t.dx);
  if (!with_wgrad) return;
  wgrad_gemm(host, names.wgrad_gemm, t.dy_total, t.x, t.dw);
  bias_op(host, names.bias_grad, Phase::wgrad, ElementwiseFn::bias_grad, s_.tokens, t.dy_total,
          t.db, t.db);
}

void TpLayerEmitter::wgrad(TpEmitHost& host, const TpTensors& t, const TpNames& names) const {
  if (s_.column && s_.sequence_parallel && s_.comm) {
    host.tp_wait(collective(host, names.x_gather_wgrad, Phase::wgrad, CollectiveKind::all_gather,
                            t.x, t.x_total, gathered_bytes()));
    if (quantized() && !s_.gather_quantized) {
      quantize(host, s_.what + " x", Phase::wgrad, s_.tokens * s_.k, 1);
    }
  }
  wgrad_gemm(host, names.wgrad_gemm, t.dy_total, s_.column ? t.x_total : t.x, t.dw);
}

}  // namespace meshsim
