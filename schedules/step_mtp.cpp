// DeepSeek-V3's multi-token prediction modules (DeepSeek-V3 technical report §2.2) as
// Megatron-Core runs them (megatron/core/transformer/multi_token_prediction.py,
// MultiTokenPredictionLayer) on the last pipeline stage, after the main head: per module k, the
// embedding of the tokens shifted by k + 1 (the shared embedding's lookup), the enorm and hnorm
// RMSNorms of it and of the hidden states, their concatenation projected from 2h to h (eh_proj, a
// column-parallel linear), one transformer layer of the model's last kind (layer index
// layers + k), a final norm, the shared output head and the loss. Not emitted: the gather of
// eh_proj's h / t outputs across the TP ranks (tokens x h per microbatch) before the layer.
#include "schedules/cross_entropy.hpp"
#include "schedules/step_builder.hpp"

namespace meshsim::step_detail {

void StepBuilder::mtp_forward(Ctx c) {
  c.phase = Phase::fwd;
  for (int k = 0; k < m_.mtp_layers; ++k) {
    c.layer = m_.layers + k;
    kernel("mtp embedding", Phase::fwd, c.layer, c.mb, c.chunk, KernelKind::copy,
           VectorShape{local_tokens_ * m_.hidden});
    norm(c, "mtp enorm", Phase::fwd);
    norm(c, "mtp hnorm", Phase::fwd);
    column_forward(c, "mtp eh proj", m_.hidden / t_, 2 * m_.hidden);
    layer_forward(c);
    norm(c, "mtp final norm", Phase::fwd);
    column_forward(c, "mtp head", vocab_shard_, m_.hidden);
    kernel("mtp loss", Phase::fwd, c.layer, c.mb, c.chunk, KernelKind::loss,
           VectorShape{tokens_ * vocab_shard_, 2,
                       cross_entropy_fp32_bytes_per_logit(p_.cross_entropy)});
  }
}

void StepBuilder::mtp_backward(Ctx c, bool with_wgrad) {
  c.phase = Phase::bwd;
  for (int k = m_.mtp_layers - 1; k >= 0; --k) {
    c.layer = m_.layers + k;
    column_backward(c, "mtp head", vocab_shard_, m_.hidden, with_wgrad);
    norm_backward(c, "mtp final norm bwd");
    layer_backward(c, with_wgrad);
    column_backward(c, "mtp eh proj", m_.hidden / t_, 2 * m_.hidden, with_wgrad);
    norm_backward(c, "mtp hnorm bwd");
    norm_backward(c, "mtp enorm bwd");
    kernel("mtp embedding grad", Phase::wgrad, c.layer, c.mb, c.chunk, KernelKind::accumulate,
           VectorShape{local_tokens_ * m_.hidden});
  }
}

void StepBuilder::mtp_wgrad(Ctx c) {
  c.phase = Phase::bwd;
  for (int k = m_.mtp_layers - 1; k >= 0; --k) {
    c.layer = m_.layers + k;
    column_wgrad(c, "mtp head", vocab_shard_, m_.hidden);
    layer_wgrad(c);
    column_wgrad(c, "mtp eh proj", m_.hidden / t_, 2 * m_.hidden);
  }
}

}  // namespace meshsim::step_detail
