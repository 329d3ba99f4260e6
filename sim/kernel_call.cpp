#include "sim/kernel_call.hpp"

#include <algorithm>
#include <array>

namespace meshsim {
namespace {

constexpr std::array<std::string_view, kKernelKindCount> kKindNames = {
    "gemm", "attention_fwd", "attention_bwd", "lse_merge",        "accumulate",
    "copy", "elementwise",   "loss",          "optimizer_update", "linear_bwd"};

constexpr std::array<std::string_view, kElementwiseFnCount> kFnNames = {
    "none", "bias_add", "bias_grad", "relu", "gelu"};

std::int64_t total_tokens(const std::vector<TokenRange>& ranges) {
  std::int64_t n = 0;
  for (const auto& r : ranges) n += r.size();
  return n;
}

// Pairs (i, j) with i in q, j in k and j <= i.
std::int64_t causal_pairs(const TokenRange& q, const TokenRange& k) {
  std::int64_t pairs = 0;
  // For query i, visible keys are [k.begin, min(k.end, i + 1)).
  const std::int64_t lo = std::max(q.begin, k.begin);  // first query that sees any key
  if (lo >= q.end) return 0;
  // Queries in [lo, k.end - 1) see (i + 1 - k.begin) keys; queries >= k.end - 1 see all.
  const std::int64_t ramp_end = std::min(q.end, k.end - 1);
  if (ramp_end > lo) {
    // sum_{i=lo}^{ramp_end-1} (i + 1 - k.begin)
    const std::int64_t first = lo + 1 - k.begin;
    const std::int64_t last = ramp_end - k.begin;
    pairs += (first + last) * (last - first + 1) / 2;
  }
  const std::int64_t full_from = std::max(lo, k.end - 1);
  if (q.end > full_from) pairs += (q.end - full_from) * k.size();
  return pairs;
}

// Elements an accumulate over row blocks adds: the q rows of q-shaped slots plus the k rows of
// packed K/V slots.
double accumulated_elements(const AttentionShape& a) {
  return static_cast<double>(a.batch * a.head_dim *
                             (total_tokens(a.q) * a.heads_q + 2 * total_tokens(a.k) * a.heads_kv));
}

}  // namespace

std::string_view to_string(KernelKind k) {
  return kKindNames[static_cast<std::size_t>(k)];
}

std::optional<KernelKind> parse_kernel_kind(std::string_view name) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i) {
    if (kKindNames[i] == name) return static_cast<KernelKind>(i);
  }
  return std::nullopt;
}

std::string_view to_string(MaskMode m) {
  return m == MaskMode::causal ? "causal" : "none";
}

std::optional<MaskMode> parse_mask_mode(std::string_view name) {
  if (name == "causal") return MaskMode::causal;
  if (name == "none") return MaskMode::none;
  return std::nullopt;
}

std::size_t expected_shape_index(KernelKind k) {
  switch (k) {
    case KernelKind::gemm:
    case KernelKind::linear_bwd:
      return 0;
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd:
    case KernelKind::lse_merge:
      return 1;
    default:
      return 2;
  }
}

bool accepts_shape(KernelKind k, std::size_t shape_index) {
  return shape_index == expected_shape_index(k) ||
         (k == KernelKind::accumulate && shape_index == 1);
}

std::string_view to_string(ElementwiseFn f) {
  return kFnNames[static_cast<std::size_t>(f)];
}

std::optional<ElementwiseFn> parse_elementwise_fn(std::string_view name) {
  for (std::size_t i = 0; i < kFnNames.size(); ++i) {
    if (kFnNames[i] == name) return static_cast<ElementwiseFn>(i);
  }
  return std::nullopt;
}

std::int64_t attention_pairs(const AttentionShape& s) {
  std::int64_t pairs = 0;
  for (const auto& q : s.q) {
    for (const auto& k : s.k) {
      pairs += s.mask == MaskMode::causal ? causal_pairs(q, k) : q.size() * k.size();
    }
  }
  return pairs;
}

double kernel_flops(const KernelCall& call) {
  if (const auto* g = std::get_if<GemmShape>(&call.shape)) {
    return (call.kind == KernelKind::linear_bwd ? 4.0 : 2.0) * static_cast<double>(g->m) *
           static_cast<double>(g->n) * static_cast<double>(g->k);
  }
  if (const auto* a = std::get_if<AttentionShape>(&call.shape)) {
    const double per_pair_head = [&] {
      switch (call.kind) {
        case KernelKind::attention_fwd:
          return 4.0 * static_cast<double>(a->head_dim);  // QK^T and PV: 2d + 2d
        case KernelKind::attention_bwd:
          return 10.0 * static_cast<double>(a->head_dim);  // recompute S, dV, dP, dQ, dK
        default:
          return 0.0;
      }
    }();
    if (call.kind == KernelKind::accumulate) return accumulated_elements(*a);
    if (per_pair_head == 0.0) {
      // lse_merge: a handful of flops per output element (exp, scale, add)
      return 4.0 * static_cast<double>(a->batch * a->heads_q * total_tokens(a->q) * a->head_dim);
    }
    return per_pair_head * static_cast<double>(attention_pairs(*a)) *
           static_cast<double>(a->batch * a->heads_q);
  }
  const auto& v = std::get<VectorShape>(call.shape);
  const double n = static_cast<double>(v.elements);
  switch (call.kind) {
    case KernelKind::optimizer_update:
      return 12.0 * n;  // Adam: moments, bias correction, update
    case KernelKind::copy:
      return 0.0;
    default:
      return n;
  }
}

double kernel_bytes(const KernelCall& call) {
  const double e = static_cast<double>(dtype_bytes(call.dtype));
  if (const auto* g = std::get_if<GemmShape>(&call.shape)) {
    const double m = static_cast<double>(g->m), n = static_cast<double>(g->n),
                 k = static_cast<double>(g->k);
    if (call.kind == KernelKind::linear_bwd) {
      // read dY, W, X; write dX; read and write dW
      return e * (m * n + k * n + m * k + m * k + 2.0 * k * n);
    }
    // Quantized A and B (scales included) and C in the call's dtype.
    const double q = call.quant == QuantFormat::none ? e : quant_element_bytes(call.quant);
    return q * (m * k + k * n) + e * (g->accumulate ? 2.0 : 1.0) * m * n;
  }
  if (const auto* a = std::get_if<AttentionShape>(&call.shape)) {
    const double b = static_cast<double>(a->batch), d = static_cast<double>(a->head_dim);
    const double tq = static_cast<double>(total_tokens(a->q));
    const double tk = static_cast<double>(total_tokens(a->k));
    const double q_elems = b * tq * static_cast<double>(a->heads_q) * d;
    const double kv_elems = 2.0 * b * tk * static_cast<double>(a->heads_kv) * d;
    const double lse_bytes = 4.0 * b * static_cast<double>(a->heads_q) * tq;
    switch (call.kind) {
      case KernelKind::accumulate:  // read x, read y, write y
        return 3.0 * e * accumulated_elements(*a);
      case KernelKind::attention_fwd:  // read q, k, v; write out (fp32 block) and lse
        return e * (q_elems + kv_elems) + 4.0 * q_elems + lse_bytes;
      case KernelKind::attention_bwd:  // read q, k, v, out, dout, lse; write dq, dk, dv in fp32
        return e * (3.0 * q_elems + kv_elems) + lse_bytes + 4.0 * (q_elems + kv_elems);
      default:  // lse_merge: read both (out, lse) pairs, write one, all fp32
        return 3.0 * (4.0 * q_elems + lse_bytes);
    }
  }
  const auto& v = std::get<VectorShape>(call.shape);
  const double n = static_cast<double>(v.elements);
  switch (call.kind) {
    case KernelKind::accumulate:
      return 3.0 * n * e;  // read x, read y, write y
    case KernelKind::copy:
      if (call.quant != QuantFormat::none) {
        // A quantize: read x in dtype, write operands - 1 quantized copies (scales included).
        return n * (e + static_cast<double>(v.operands - 1) * quant_element_bytes(call.quant));
      }
      return n * (static_cast<double>(v.operands) * e + static_cast<double>(v.mask_bytes));
    case KernelKind::optimizer_update:
      // Adam over fp32 master weights (Megatron-LM's mixed-precision optimizer step with a fused
      // Adam, then the master copied into the model's weight): read the fp32 gradient; read and
      // write the fp32 master and both moments; write the weight in its dtype.
      return n * (4.0 + 3.0 * 2.0 * 4.0 + e);
    default:  // the operands moved (2: read x, write y) and any dropout mask bytes
      return n * (static_cast<double>(v.operands) * e + static_cast<double>(v.mask_bytes));
  }
}

}  // namespace meshsim
