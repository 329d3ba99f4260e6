#include "validate/check/ring_attention_reference.hpp"

#include <numeric>

#include "kernels/reference/attention.hpp"
#include "validate/check/numerics.hpp"

namespace meshsim {

std::map<std::string, std::vector<double>> ring_attention_reference(
    const RingAttentionConfig& c, const std::vector<GlobalTensorData>& tensors) {
  namespace ref = kernels::reference;
  const ref::AttentionDims dims{c.batch,
                                c.heads,
                                c.kv_heads,
                                c.head_dim,
                                c.causal ? kernels::Mask::causal : kernels::Mask::none,
                                0.0};
  const auto& q = find_tensor(tensors, "q").values;
  const auto& k = find_tensor(tensors, "k").values;
  const auto& v = find_tensor(tensors, "v").values;
  std::map<std::string, std::vector<double>> out;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(c.seq));
  std::iota(pos.begin(), pos.end(), std::int64_t{0});
  if (c.pass == AttentionPass::bwd) {
    ref::AttentionGrads g = ref::attention_block_backward(
        dims, q, k, v, find_tensor(tensors, "out").values, find_tensor(tensors, "dout").values,
        find_tensor(tensors, "lse").values, pos, pos);
    out["dq"] = std::move(g.dq);
    out["dk"] = std::move(g.dk);
    out["dv"] = std::move(g.dv);
    return out;
  }
  if (c.pass == AttentionPass::fwd) {
    ref::AttentionOutput f = ref::attention_forward(dims, q, k, v, pos, pos);
    out["out"] = std::move(f.out);
    out["lse"] = std::move(f.lse);
    return out;
  }
  ref::FullAttention f =
      ref::full_attention(dims, c.seq, q, k, v, find_tensor(tensors, "dout").values);
  out["out"] = std::move(f.out);
  out["lse"] = std::move(f.lse);
  out["dq"] = std::move(f.dq);
  out["dk"] = std::move(f.dk);
  out["dv"] = std::move(f.dv);
  return out;
}

}  // namespace meshsim
