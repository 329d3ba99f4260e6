#include "schedules/layer_kernels.hpp"

#include <array>

#include "sim/enum_names.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, 3> kNames = {"fused", "torch-eager", "torch-compile"};

bool eager(LayerKernels k) {
  return k == LayerKernels::torch_eager;
}

}  // namespace

std::string_view to_string(LayerKernels k) {
  return enum_name(kNames, k);
}
std::optional<LayerKernels> parse_layer_kernels(std::string_view s) {
  return parse_enum_name<LayerKernels>(kNames, s);
}

PassBytes norm_pass(LayerKernels k, NormKind norm, bool backward) {
  if (!eager(k) || norm != NormKind::rmsnorm) {
    // One kernel: forward reads x and writes y; backward reads x and dy and writes dx (the
    // weight-gradient row sums are small).
    return backward ? PassBytes{3, 0} : PassBytes{2, 0};
  }
  if (!backward) {
    // torchtitan's RMSNorm.forward: self._norm(x.float()).type_as(x) * self.weight with
    // _norm(x) = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps). In the activation dtype:
    // read x, write the type_as result, read it and write the weighted output (4 operands). In
    // fp32: the upcast writes 4; pow reads and writes 8; mean reads 4; the multiplication by the
    // per-row rsqrt reads and writes 8; type_as reads 4: 28.
    return PassBytes{4, 28};
  }
  // Autograd's backward of that chain (PyTorch tools/autograd/derivatives.yaml, FunctionsManual):
  // weight multiplication: dy * w (read dy, write: 2 operands) and dw = sum(dy * out) (read dy and
  // out, write the product, read it in the row sum: 4); type_as: the upcast reads the gradient (1)
  // and writes 4; the rsqrt multiplication: g * r reads and writes 8, g * xf reads 8 and writes 4,
  // its row sum reads 4 (24); mean: the expanded gradient / h writes 4; pow_backward:
  // grad * (2 * x.pow(1)) — the copy reads and writes 8, the scaling 8, the product reads 8 and
  // writes 4 (28); the two gradients of x.float() summed: read 8, write 4 (12); the cast back
  // reads 4 and writes the activation dtype (1 operand). 8 operands; 4 + 24 + 4 + 28 + 12 + 4 = 76.
  return PassBytes{8, 76};
}

PassBytes gated_activation_pass(LayerKernels k, bool backward) {
  if (!eager(k)) {
    // Fused SwiGLU: forward reads both halves and writes their product (3); backward reads both
    // halves and dy and writes the gradient of both halves (5).
    return backward ? PassBytes{5, 0} : PassBytes{3, 0};
  }
  // FeedForward.forward: w2(F.silu(w1(x)) * w3(x)). Forward: silu reads a and writes s (2); the
  // product reads s and b and writes y (3): 5. Backward: the product's gradients dy * b and dy * s
  // (3 each), then silu's backward reads its gradient and a and writes da (3): 9.
  return backward ? PassBytes{9, 0} : PassBytes{5, 0};
}

PassBytes rope_pass(LayerKernels k, bool backward) {
  if (!eager(k)) {
    // One kernel (Transformer Engine's fused RoPE, or Inductor's): read x, write the rotated x,
    // forward and backward alike.
    return PassBytes{2, 0};
  }
  // apply_rotary_emb: view_as_complex(x.float().reshape(..., -1, 2)) * freqs_cis, view_as_real,
  // type_as(x). Forward: the upcast reads x (1 operand) and writes 4; the complex multiplication
  // reads and writes 8 (freqs_cis, one complex64 per position and pair, is shared by the batch and
  // heads); type_as reads 4 and writes the activation dtype (1). Backward, in reverse: the upcast
  // of the gradient (1 operand, writes 4), the multiplication by conj(freqs_cis) (8), the cast
  // back (reads 4, writes 1 operand). The views cost nothing.
  (void)backward;
  return PassBytes{2, 16};
}

bool repeats_kv_heads(LayerKernels k) {
  return k != LayerKernels::fused;
}

std::int64_t attention_kv_heads(const TransformerModel& m, LayerKernels k) {
  return repeats_kv_heads(k) && !m.mla ? m.heads : m.kv_heads;
}

bool saves_repeated_kv(LayerKernels k) {
  return eager(k);
}

double extra_saved_bytes_per_norm_element(LayerKernels k, NormKind norm) {
  // Saved by autograd: the fp32 upcast (pow's and the rsqrt multiplication's input, 4 bytes) and
  // the bf16 type_as result (the weight multiplication's input, 2), where the fused kernel keeps
  // the bf16 input (2).
  return eager(k) && norm == NormKind::rmsnorm ? 4.0 : 0.0;
}

double extra_saved_bytes_per_gated_element(LayerKernels k) {
  // Saved: silu's input a, the product's inputs s and b (2 bytes each) against the fused
  // kernel's a and b.
  return eager(k) ? 2.0 : 0.0;
}

}  // namespace meshsim
