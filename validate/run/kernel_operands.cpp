#include "validate/run/kernel_operands.hpp"

#include <array>

#include <fmt/format.h>

#include "sim/enum_names.hpp"
#include "sim/error.hpp"
#include "validate/run/activation_of.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, 4> kFaultNames = {"none", "attention-mask", "lse-merge",
                                                         "gemm-scale"};

kernels::Mask mask_of(const AttentionShape& a, InjectedFault fault) {
  if (fault == InjectedFault::attention_mask) return kernels::Mask::none;
  return a.mask == MaskMode::causal ? kernels::Mask::causal : kernels::Mask::none;
}

// Rows of `slot` (of part `part` for an all-gathered K/V slot) holding the wanted positions.
std::vector<kernels::RowSpan> rows_in(const SlotViews& v, SlotId slot,
                                      const std::vector<TokenRange>& wanted,
                                      std::int64_t part = 0) {
  const auto w = position_ranges(wanted);
  return kernels::locate_rows(w, v.token_layout(slot, part));
}

// At least `min_inputs` inputs and exactly `outputs` outputs.
void expect_outputs(const KernelCall& call, std::size_t min_inputs, std::size_t outputs) {
  MESHSIM_CHECK(call.inputs.size() >= min_inputs && call.outputs.size() == outputs,
                fmt::format("{} takes at least {} inputs and {} outputs", to_string(call.kind),
                            min_inputs, outputs));
}

// The first n elements of x and y.
VectorPair leading(const SlotViews& v, SlotId x, SlotId y, std::int64_t n, const char* what) {
  MESHSIM_CHECK(n <= v.elements(x) && n <= v.elements(y),
                fmt::format("{}: more elements than slots", what));
  return VectorPair{kernels::sub_vector(v.vector(x), 0, n), kernels::sub_vector(v.vector(y), 0, n)};
}

std::vector<VectorPair> bind_row_accumulate(const SlotViews& v, const KernelCall& call) {
  expect_operands(call, 2, 1);
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId x = call.inputs[0], y = call.inputs[1];
  MESHSIM_CHECK(call.outputs[0] == y, "accumulate adds into its second input");
  MESHSIM_CHECK(a.q.empty() != a.k.empty(), "a row-block accumulate names q rows or k rows");
  const bool kv = a.q.empty();
  const TensorSlot& sx = v.slot(x);
  const TensorSlot& sy = v.slot(y);
  MESHSIM_CHECK(sx.shape == sy.shape && sx.tokens == sy.tokens,
                fmt::format("accumulate: slots '{}' and '{}' differ", sx.name, sy.name));
  const std::vector<kernels::RowSpan> rows = rows_in(v, y, kv ? a.k : a.q);
  // [halves, batch, tokens, heads * head_dim] with halves = 2 for packed K/V.
  const std::size_t o = kv ? 1 : 0;
  MESHSIM_CHECK(sy.shape.size() == o + 4, fmt::format("accumulate: slot '{}' shape", sy.name));
  const std::int64_t halves = kv ? 2 : 1, batch = sy.shape[o], tokens = sy.shape[o + 1],
                     width = sy.shape[o + 2] * sy.shape[o + 3];
  const kernels::VectorView vx = v.vector(x), vy = v.vector(y);
  std::vector<VectorPair> pairs;
  for (std::int64_t h = 0; h < halves; ++h) {
    for (std::int64_t b = 0; b < batch; ++b) {
      for (const auto& r : rows) {
        const std::int64_t at = ((h * batch + b) * tokens + r.row) * width;
        pairs.push_back({kernels::sub_vector(vx, at, r.count * width),
                         kernels::sub_vector(vy, at, r.count * width)});
      }
    }
  }
  return pairs;
}

}  // namespace

std::string_view to_string(InjectedFault f) {
  return kFaultNames[static_cast<std::size_t>(f)];
}

std::optional<InjectedFault> parse_injected_fault(std::string_view name) {
  return parse_enum_name<InjectedFault>(kFaultNames, name);
}

bool fault_applies(InjectedFault fault, const Program& program) {
  for (const Op& op : program.ops) {
    const auto* call = std::get_if<KernelCall>(&op.body);
    if (call == nullptr) continue;
    const auto* attention = std::get_if<AttentionShape>(&call->shape);
    const bool is_attention =
        call->kind == KernelKind::attention_fwd || call->kind == KernelKind::attention_bwd;
    switch (fault) {
      case InjectedFault::none:
        return false;
      case InjectedFault::attention_mask:
        if (is_attention && attention->mask == MaskMode::causal) return true;
        break;
      case InjectedFault::lse_merge:
        if (call->kind == KernelKind::lse_merge) return true;
        break;
      case InjectedFault::gemm_scale:
        if (call->kind == KernelKind::gemm || call->kind == KernelKind::linear_bwd) return true;
        break;
    }
  }
  return false;
}

double gemm_alpha(InjectedFault fault) {
  return fault == InjectedFault::gemm_scale ? kFaultyGemmAlpha : 1.0;
}

void expect_operands(const KernelCall& call, std::size_t inputs, std::size_t outputs) {
  MESHSIM_CHECK(
      call.inputs.size() == inputs && call.outputs.size() == outputs,
      fmt::format("{} with {} takes {} inputs and {} outputs, got {} and {}", to_string(call.kind),
                  to_string(call.fn), inputs, outputs, call.inputs.size(), call.outputs.size()));
}

AttentionForwardOperands bind_attention_forward(const SlotViews& v, const KernelCall& call,
                                                InjectedFault fault) {
  expect_operands(call, 2, 2);
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId q = call.inputs[0], kv = call.inputs[1], out = call.outputs[0],
               lse = call.outputs[1];
  const std::int64_t part = v.part_holding(kv, a.k);
  MESHSIM_CHECK(
      v.token_layout(out) == v.token_layout(q) && v.token_layout(lse) == v.token_layout(q),
      "attention_fwd: out and lse must hold the query slot's positions");
  return AttentionForwardOperands{mask_of(a, fault),
                                  rows_in(v, q, a.q),
                                  rows_in(v, kv, a.k, part),
                                  v.heads(q, a.heads_q),
                                  v.kv(kv, part),
                                  v.heads(out, a.heads_q),
                                  v.lse(lse)};
}

AttentionBackwardOperands bind_attention_backward(const SlotViews& v, const KernelCall& call,
                                                  InjectedFault fault) {
  expect_operands(call, 5, 2);
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId q = call.inputs[0], kv = call.inputs[1], out = call.inputs[2], dout = call.inputs[3],
               lse = call.inputs[4], dq = call.outputs[0], dkv = call.outputs[1];
  const std::int64_t part = v.part_holding(kv, a.k);
  AttentionBackwardOperands o;
  o.mask = mask_of(a, fault);
  o.q_rows = rows_in(v, q, a.q);
  o.k_rows = rows_in(v, kv, a.k, part);
  MESHSIM_CHECK(rows_in(v, dkv, a.k) == o.k_rows,
                "attention_bwd: dK/dV must hold the positions of the K/V it differentiates");
  o.q = v.heads(q, a.heads_q);
  o.kv = v.kv(kv, part);
  o.out = v.heads(out, a.heads_q);
  o.dout = v.heads(dout, a.heads_q);
  o.lse = v.lse(lse);
  o.dq = v.heads(dq, a.heads_q);
  o.dkv = v.kv(dkv);
  return o;
}

std::optional<LseMergeOperands> bind_lse_merge(const SlotViews& v, const KernelCall& call,
                                               InjectedFault fault) {
  expect_operands(call, 4, 2);
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId blk_out = call.inputs[0], blk_lse = call.inputs[1], out = call.inputs[2],
               lse = call.inputs[3];
  MESHSIM_CHECK(call.outputs[0] == out && call.outputs[1] == lse,
                "lse_merge merges into its accumulator inputs");
  if (fault == InjectedFault::lse_merge) return std::nullopt;
  std::vector<kernels::RowSpan> rows = rows_in(v, out, a.q);
  MESHSIM_CHECK(rows_in(v, blk_out, a.q) == rows, "lse_merge: block and accumulator rows differ");
  return LseMergeOperands{std::move(rows), v.heads(blk_out, a.heads_q), v.lse(blk_lse),
                          v.heads(out, a.heads_q), v.lse(lse)};
}

std::vector<VectorPair> bind_accumulate(const SlotViews& v, const KernelCall& call) {
  if (std::holds_alternative<AttentionShape>(call.shape)) return bind_row_accumulate(v, call);
  expect_outputs(call, 2, 1);
  const SlotId x = call.inputs[0], y = call.inputs[1];
  MESHSIM_CHECK(call.outputs[0] == y, "accumulate adds into its second input");
  return {leading(v, x, y, std::get<VectorShape>(call.shape).elements, "accumulate")};
}

VectorPair bind_copy(const SlotViews& v, const KernelCall& call) {
  expect_outputs(call, 1, 1);
  return leading(v, call.inputs[0], call.outputs[0], std::get<VectorShape>(call.shape).elements,
                 "copy");
}

GemmOperands bind_gemm(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  expect_outputs(call, 2, 1);
  const auto& g = std::get<GemmShape>(call.shape);
  const SlotId a = call.inputs[0], b = call.inputs[1], c = call.outputs[0];
  return GemmOperands{g.trans_a ? v.matrix(a, g.k, g.m) : v.matrix(a, g.m, g.k),
                      g.trans_a,
                      g.trans_b ? v.matrix(b, g.n, g.k) : v.matrix(b, g.k, g.n),
                      g.trans_b,
                      v.matrix(c, g.m, g.n),
                      gemm_alpha(fault),
                      g.accumulate ? 1.0 : 0.0};
}

GemmActivationOperands bind_gemm_activation(const SlotViews& v, const KernelCall& call,
                                            InjectedFault fault) {
  const auto& g = std::get<GemmShape>(call.shape);
  MESHSIM_CHECK(!g.trans_a && !g.accumulate,
                "a gemm with an activation neither transposes A nor accumulates");
  GemmActivationOperands o;
  o.f = activation_of(call.fn);
  o.backward = g.trans_b;
  if (!o.backward) {
    // Forward: pre [m, n] = x [m, k] w [k, n], y = f(pre).
    expect_operands(call, 2, 2);
    const SlotId x = call.inputs[0], w = call.inputs[1], y = call.outputs[0], pre = call.outputs[1];
    o.gemm = GemmOperands{
        v.matrix(x, g.m, g.k), false, v.matrix(w, g.k, g.n), false, v.matrix(pre, g.m, g.n),
        gemm_alpha(fault),     0.0};
    o.pre = kernels::as_vector(v.matrix(pre, g.m, g.n));
    o.y = kernels::as_vector(v.matrix(y, g.m, g.n));
    return o;
  }
  // Input gradient of a split backward: dh [m, k] = f'(pre) dy, dx [m, n] = dh w^T, w [n, k].
  expect_operands(call, 3, 2);
  const SlotId dy = call.inputs[0], w = call.inputs[1], pre = call.inputs[2], dx = call.outputs[0],
               dh = call.outputs[1];
  o.gemm = GemmOperands{
      v.matrix(dh, g.m, g.k), false, v.matrix(w, g.n, g.k), true, v.matrix(dx, g.m, g.n),
      gemm_alpha(fault),      0.0};
  o.pre = kernels::as_vector(v.matrix(pre, g.m, g.k));
  o.y = kernels::as_vector(v.matrix(dy, g.m, g.k));
  o.dh = kernels::as_vector(o.gemm.a);
  return o;
}

LinearBackwardOperands bind_linear_backward(const SlotViews& v, const KernelCall& call,
                                            InjectedFault fault) {
  const auto& g = std::get<GemmShape>(call.shape);  // the forward's: m tokens, n out, k in
  MESHSIM_CHECK(!g.trans_a && !g.trans_b, "linear_bwd takes the forward's untransposed shape");
  const bool with_fn = call.fn != ElementwiseFn::none;
  expect_operands(call, with_fn ? 4 : 3, 2);
  LinearBackwardOperands o;
  if (with_fn) {
    o.f = activation_of(call.fn);
    o.pre = kernels::as_vector(v.matrix(call.inputs[3], g.m, g.n));
  }
  o.x = v.matrix(call.inputs[0], g.m, g.k);
  o.w = v.matrix(call.inputs[1], g.k, g.n);
  o.dy = v.matrix(call.inputs[2], g.m, g.n);
  o.dx = v.matrix(call.outputs[0], g.m, g.k);
  o.dw = v.matrix(call.outputs[1], g.k, g.n);
  o.alpha = gemm_alpha(fault);
  return o;
}

BiasOperands bind_bias(const SlotViews& v, const KernelCall& call) {
  expect_outputs(call, 2, 1);
  const bool add = call.fn == ElementwiseFn::bias_add;
  const SlotId rows = call.inputs[0], bias = add ? call.inputs[1] : call.outputs[0];
  const std::int64_t n = v.elements(bias);
  return BiasOperands{add, v.matrix(rows, v.elements(rows) / n, n), v.vector(bias)};
}

ActivationOperands bind_activation(const SlotViews& v, const KernelCall& call) {
  expect_operands(call, 1, 1);
  const std::int64_t n = std::get<VectorShape>(call.shape).elements;
  const SlotId x = call.inputs[0], y = call.outputs[0];
  MESHSIM_CHECK(
      n == v.elements(x) && n == v.elements(y),
      fmt::format("{}: {} elements over slots '{}' ({}) and '{}' ({})", to_string(call.fn), n,
                  v.slot(x).name, v.elements(x), v.slot(y).name, v.elements(y)));
  return ActivationOperands{activation_of(call.fn), v.vector(x), v.vector(y)};
}

}  // namespace meshsim
