#include <doctest/doctest.h>

#include <initializer_list>

#include <cmath>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/reference/attention.hpp"
#include "tests/kernels/cpu/attention_test_util.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::cpu;
using namespace meshsim::kernels::test;

namespace {

struct Case {
  ScalarType in;    // q, k, v, out, dout
  ScalarType grad;  // dq, dk, dv
  Mask mask;
  std::int64_t heads_q, heads_kv, head_dim;
  Store mode;
};

// The same block shape as the forward test: two query tiles and two key tiles, rows scattered in
// the buffers, and (causal) 3 query rows that see no key.
const std::vector<RowSpan> kQueryRows{{5, 1000, 140}, {200, 50, 60}, {280, -5, 3}};
const std::vector<RowSpan> kKeyRows{{0, 0, 300}, {310, 1100, 40}};
constexpr std::int64_t kQueryTokens = 290, kKeyTokens = 360, kBatch = 2;

void run_case(const Case& c, std::uint64_t seed) {
  CAPTURE(to_string(c.in));
  CAPTURE(to_string(c.grad));
  CAPTURE(c.mask == Mask::causal);
  CAPTURE(c.heads_q);
  CAPTURE(c.heads_kv);
  CAPTURE(c.mode == Store::accumulate);
  Rng rng(seed);
  const Extents qe{kBatch, kQueryTokens, c.heads_q, c.head_dim};
  const Extents ke{kBatch, kKeyTokens, c.heads_kv, c.head_dim};
  const ScalarType lse_type = c.in == ScalarType::fp64 ? ScalarType::fp64 : ScalarType::fp32;
  Buffer q = random_buffer(c.in, qe.size(), rng, -2.0, 2.0);
  Buffer k = random_buffer(c.in, ke.size(), rng, -2.0, 2.0);
  Buffer v = random_buffer(c.in, ke.size(), rng, -2.0, 2.0);
  Buffer dout = random_buffer(c.in, qe.size(), rng);
  const reference::AttentionDims dims{kBatch, c.heads_q, c.heads_kv, c.head_dim, c.mask, 0.0};
  const std::vector<std::int64_t> qpos = positions_of(kQueryRows), kpos = positions_of(kKeyRows);
  const std::vector<double> qd = gather_rows(q.values(), qe, kQueryRows);
  const std::vector<double> kd = gather_rows(k.values(), ke, kKeyRows);
  const std::vector<double> vd = gather_rows(v.values(), ke, kKeyRows);
  const std::vector<double> dod = gather_rows(dout.values(), qe, kQueryRows);

  // out and lse of the block (the final ones for a single block), stored in their types.
  const reference::AttentionOutput fwd = reference::attention_forward(dims, qd, kd, vd, qpos, kpos);
  Buffer out(c.in, qe.size());
  Buffer lse(lse_type, kBatch * c.heads_q * kQueryTokens);
  {
    std::vector<double> o(static_cast<std::size_t>(qe.size())),
        l(static_cast<std::size_t>(lse.size()));
    scatter_add_rows(fwd.out, qe, kQueryRows, o);
    scatter_lse(fwd.lse, kBatch, c.heads_q, kQueryTokens, kQueryRows, l);
    out.set(o);
    lse.set(l);
  }
  const std::vector<double> outd = gather_rows(out.values(), qe, kQueryRows);
  const std::vector<double> lsed =
      gather_lse(lse.values(), kBatch, c.heads_q, kQueryTokens, kQueryRows);
  const reference::AttentionGrads want_block =
      reference::attention_block_backward(dims, qd, kd, vd, outd, dod, lsed, qpos, kpos);

  // Gradients start random (accumulate: kept and added to; overwrite: replaced by zeros outside
  // the block and the block's gradient inside).
  Buffer dq = random_buffer(c.grad, qe.size(), rng);
  Buffer dk = random_buffer(c.grad, ke.size(), rng);
  Buffer dv = random_buffer(c.grad, ke.size(), rng);
  std::vector<double> want_dq(static_cast<std::size_t>(qe.size())),
      want_dk(static_cast<std::size_t>(ke.size())), want_dv(static_cast<std::size_t>(ke.size()));
  if (c.mode == Store::accumulate) {
    want_dq = dq.values();
    want_dk = dk.values();
    want_dv = dv.values();
  }
  scatter_add_rows(want_block.dq, qe, kQueryRows, want_dq);
  scatter_add_rows(want_block.dk, ke, kKeyRows, want_dk);
  scatter_add_rows(want_block.dv, ke, kKeyRows, want_dv);

  const auto hv = [&](Buffer& b, ScalarType t, const Extents& e) {
    return heads_view(b.data(), t, e.batch, e.tokens, e.heads, e.dim);
  };
  attention_backward(AttentionBlock{c.mask, kQueryRows, kKeyRows, 0.0}, hv(q, c.in, qe),
                     hv(k, c.in, ke), hv(v, c.in, ke), hv(out, c.in, qe), hv(dout, c.in, qe),
                     lse_view(lse.data(), lse_type, kBatch, c.heads_q, kQueryTokens),
                     hv(dq, c.grad, qe), hv(dk, c.grad, ke), hv(dv, c.grad, ke), c.mode);
  // max |grad - ref| / max |ref| over the whole tensors: fp32 1e-5 (fp32 math: the tile sums of
  // up to 340 terms in float32), bf16 1e-2, fp64 1e-12.
  const double tol = std::max(tolerance(c.grad), tolerance(lse_type));
  CHECK(max_rel_error(dq.values(), want_dq) <= tol);
  CHECK(max_rel_error(dk.values(), want_dk) <= tol);
  CHECK(max_rel_error(dv.values(), want_dv) <= tol);
}

}  // namespace

TEST_CASE("attention_backward equals the float64 reference (FlashAttention form)") {
  // Reference: reference::attention_block_backward with the same stored out and lse:
  // D = rowsum(dout * out), P = exp(S - lse), dV = P^T dO, dS = P (dO V^T - D), dQ = scale dS K,
  // dK = scale dS^T Q, in float64 loops.
  std::uint64_t seed = 200;
  for (Mask mask : {Mask::none, Mask::causal}) {
    for (Store mode : {Store::overwrite, Store::accumulate}) {
      run_case({ScalarType::fp32, ScalarType::fp32, mask, 4, 2, 16, mode}, ++seed);
      run_case({ScalarType::bf16, ScalarType::fp32, mask, 4, 1, 16, mode}, ++seed);
      run_case({ScalarType::bf16, ScalarType::bf16, mask, 2, 2, 8, mode}, ++seed);
      run_case({ScalarType::fp64, ScalarType::fp64, mask, 3, 3, 8, mode}, ++seed);
    }
  }
}

TEST_CASE("attention_backward of one block equals the textbook backward of that attention") {
  // With out and lse from the block's own forward, the FlashAttention form is the full gradient:
  // checked against reference::attention_backward (softmax Jacobian, no lse input), fp64 1e-12.
  Rng rng(300);
  const Extents e{1, 20, 2, 4};
  Buffer q = random_buffer(ScalarType::fp64, e.size(), rng);
  Buffer k = random_buffer(ScalarType::fp64, e.size(), rng);
  Buffer v = random_buffer(ScalarType::fp64, e.size(), rng);
  Buffer dout = random_buffer(ScalarType::fp64, e.size(), rng);
  Buffer out(ScalarType::fp64, e.size()), lse(ScalarType::fp64, 2 * 20);
  Buffer dq(ScalarType::fp64, e.size()), dk(ScalarType::fp64, e.size()),
      dv(ScalarType::fp64, e.size());
  const auto hv = [&](Buffer& b) { return heads_view(b.data(), ScalarType::fp64, 1, 20, 2, 4); };
  const AttentionBlock block{Mask::causal, {{0, 0, 20}}, {{0, 0, 20}}, 0.0};
  const LseView l = lse_view(lse.data(), ScalarType::fp64, 1, 2, 20);
  attention_forward(block, hv(q), hv(k), hv(v), hv(out), l);
  attention_backward(block, hv(q), hv(k), hv(v), hv(out), hv(dout), l, hv(dq), hv(dk), hv(dv));
  const reference::FullAttention want =
      reference::full_attention(reference::AttentionDims{1, 2, 2, 4, Mask::causal, 0.0}, 20,
                                q.values(), k.values(), v.values(), dout.values());
  CHECK(max_rel_error(dq.values(), want.dq) <= 1e-12);
  CHECK(max_rel_error(dk.values(), want.dk) <= 1e-12);
  CHECK(max_rel_error(dv.values(), want.dv) <= 1e-12);
}
