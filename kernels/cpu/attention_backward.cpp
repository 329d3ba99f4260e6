// attention_backward: FlashAttention-2's backward on the CPU. Per (batch, K/V head) the K/V rows
// are gathered once and dK/dV accumulate over the group's query heads; per query head, D = rowsum
// (dout * out), and per (query tile, key tile): S = scale Q K^T, P = exp(S - lse) (masked: 0),
// dV += P^T dO, dP = dO V^T, dS = P (dP - D), dQ += scale dS K, dK += scale dS^T Q (BLAS).
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/attention_rows.hpp"
#include "kernels/cpu/blas.hpp"

namespace meshsim::kernels::cpu {
namespace {

using detail::kKeyTile;
using detail::kQueryTile;

struct Operands {
  const HeadsView &q, &k, &v, &out, &dout;
  const LseView& lse;
  const HeadsView &dq, &dk, &dv;
};

template <class M>
void backward_in(const AttentionBlock& block, double scale_d, const Operands& t) {
  const detail::Rows qr = detail::expand_rows(block.q, t.q.tokens, "query");
  const detail::Rows kr = detail::expand_rows(block.k, t.k.tokens, "key");
  const std::int64_t nq = qr.size(), nk = kr.size(), d = t.q.head_dim;
  if (nq == 0 || nk == 0) return;
  const M scale = static_cast<M>(scale_d);
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  std::vector<M> kbuf(n(nk * d)), vbuf(n(nk * d)), dkbuf(n(nk * d)), dvbuf(n(nk * d));
  std::vector<M> qbuf(n(nq * d)), dobuf(n(nq * d)), obuf(n(nq * d)), dqbuf(n(nq * d));
  std::vector<M> lse(n(nq)), delta(n(nq));
  std::vector<M> pbuf(n(kQueryTile * kKeyTile)), dsbuf(n(kQueryTile * kKeyTile));

  for (std::int64_t b = 0; b < t.q.batch; ++b) {
    for (std::int64_t hk = 0; hk < t.k.heads; ++hk) {
      detail::gather(t.k, b, hk, kr, 0, nk, kbuf.data());
      detail::gather(t.v, b, hk, kr, 0, nk, vbuf.data());
      std::fill(dkbuf.begin(), dkbuf.end(), M(0));
      std::fill(dvbuf.begin(), dvbuf.end(), M(0));
      for (std::int64_t h = 0; h < t.q.heads; ++h) {
        if (kv_head_of(h, t.q.heads, t.k.heads) != hk) continue;
        detail::gather(t.q, b, h, qr, 0, nq, qbuf.data());
        detail::gather(t.dout, b, h, qr, 0, nq, dobuf.data());
        detail::gather(t.out, b, h, qr, 0, nq, obuf.data());
        for (std::int64_t i = 0; i < nq; ++i) {
          lse[n(i)] = detail::load_lse<M>(t.lse, b, h, qr.row[n(i)]);
          M dot = 0;
          for (std::int64_t c = 0; c < d; ++c) dot += dobuf[n(i * d + c)] * obuf[n(i * d + c)];
          delta[n(i)] = dot;
        }
        std::fill(dqbuf.begin(), dqbuf.end(), M(0));
        for (std::int64_t i0 = 0; i0 < nq; i0 += kQueryTile) {
          const std::int64_t bq = std::min(kQueryTile, nq - i0);
          const detail::PositionSpan qspan = detail::position_span(qr, i0, bq);
          const M* q_tile = qbuf.data() + i0 * d;
          const M* do_tile = dobuf.data() + i0 * d;
          for (std::int64_t j0 = 0; j0 < nk; j0 += kKeyTile) {
            const std::int64_t bk = std::min(kKeyTile, nk - j0);
            const detail::TileMask tile =
                detail::classify_tile(block.mask, qspan, detail::position_span(kr, j0, bk));
            if (tile == detail::TileMask::hidden) continue;
            const M* k_tile = kbuf.data() + j0 * d;
            const M* v_tile = vbuf.data() + j0 * d;
            M* p = pbuf.data();
            M* ds = dsbuf.data();
            detail::blas_gemm(false, true, bq, bk, d, scale, q_tile, d, k_tile, d, M(0), p, bk);
            for (std::int64_t i = 0; i < bq; ++i) {
              const std::int64_t qpos = qr.position[n(i0 + i)];
              const M row_lse = lse[n(i0 + i)];
              M* prow = p + i * bk;
              for (std::int64_t j = 0; j < bk; ++j) {
                const bool visible = tile == detail::TileMask::full ||
                                     key_visible(block.mask, qpos, kr.position[n(j0 + j)]);
                prow[j] = visible ? attention_probability(prow[j], row_lse) : M(0);
              }
            }
            // dV [bk, d] += P^T [bk, bq] dO [bq, d]
            detail::blas_gemm(true, false, bk, d, bq, M(1), p, bk, do_tile, d, M(1),
                              dvbuf.data() + j0 * d, d);
            // dP [bq, bk] = dO [bq, d] V^T [d, bk]
            detail::blas_gemm(false, true, bq, bk, d, M(1), do_tile, d, v_tile, d, M(0), ds, bk);
            for (std::int64_t i = 0; i < bq; ++i) {
              const M row_delta = delta[n(i0 + i)];
              for (std::int64_t j = 0; j < bk; ++j) {
                ds[i * bk + j] = p[i * bk + j] * (ds[i * bk + j] - row_delta);
              }
            }
            // dQ [bq, d] += scale dS [bq, bk] K [bk, d]
            detail::blas_gemm(false, false, bq, d, bk, scale, ds, bk, k_tile, d, M(1),
                              dqbuf.data() + i0 * d, d);
            // dK [bk, d] += scale dS^T [bk, bq] Q [bq, d]
            detail::blas_gemm(true, false, bk, d, bq, scale, ds, bk, q_tile, d, M(1),
                              dkbuf.data() + j0 * d, d);
          }
        }
        detail::scatter(dqbuf.data(), t.dq, b, h, qr, 0, nq, Store::accumulate);
      }
      detail::scatter(dkbuf.data(), t.dk, b, hk, kr, 0, nk, Store::accumulate);
      detail::scatter(dvbuf.data(), t.dv, b, hk, kr, 0, nk, Store::accumulate);
    }
  }
}

}  // namespace

void attention_backward(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                        const HeadsView& v, const HeadsView& out, const HeadsView& dout,
                        const LseView& lse, const HeadsView& dq, const HeadsView& dk,
                        const HeadsView& dv, Store mode) {
  const double scale = detail::check_block(block, q, k, v);
  detail::check_same_extents(out, q, "out");
  detail::check_same_extents(dout, q, "dout");
  detail::check_same_extents(dq, q, "dq");
  detail::check_same_extents(dk, k, "dk");
  detail::check_same_extents(dv, v, "dv");
  detail::check_lse(lse, q, "lse");
  if (mode == Store::overwrite) {
    zero(dq);
    zero(dk);
    zero(dv);
  }
  const Operands t{q, k, v, out, dout, lse, dq, dk, dv};
  if (math_in_double(q.type, k.type, v.type)) {
    backward_in<double>(block, scale, t);
  } else {
    backward_in<float>(block, scale, t);
  }
}

}  // namespace meshsim::kernels::cpu
