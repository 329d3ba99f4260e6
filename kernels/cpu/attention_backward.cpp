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

std::size_t to_size(std::int64_t x) {
  return static_cast<std::size_t>(x);
}

// The buffers of one (batch, K/V head): its K/V rows and dK/dV sums; of one query head: its q,
// dout and out rows, lse, D and dQ sums; of one tile: P and dS.
template <class M>
struct BackwardBuffers {
  std::vector<M> k, v, dk, dv;      // [nk, d]
  std::vector<M> q, dout, out, dq;  // [nq, d]
  std::vector<M> lse, delta;        // [nq]
  std::vector<M> p, ds;             // [kQueryTile, kKeyTile]

  BackwardBuffers(std::int64_t nq, std::int64_t nk, std::int64_t d)
      : k(to_size(nk * d)),
        v(to_size(nk * d)),
        dk(to_size(nk * d)),
        dv(to_size(nk * d)),
        q(to_size(nq * d)),
        dout(to_size(nq * d)),
        out(to_size(nq * d)),
        dq(to_size(nq * d)),
        lse(to_size(nq)),
        delta(to_size(nq)),
        p(to_size(kQueryTile * kKeyTile)),
        ds(to_size(kQueryTile * kKeyTile)) {}
};

// Query head h's rows gathered, with their lse and D = rowsum(dout * out); its dQ sums zeroed.
template <class M>
void load_query_head(const Operands& t, std::int64_t b, std::int64_t h, const detail::Rows& qr,
                     std::int64_t d, BackwardBuffers<M>& buf) {
  const std::int64_t nq = qr.size();
  detail::gather(t.q, b, h, qr, 0, nq, buf.q.data());
  detail::gather(t.dout, b, h, qr, 0, nq, buf.dout.data());
  detail::gather(t.out, b, h, qr, 0, nq, buf.out.data());
  for (std::int64_t i = 0; i < nq; ++i) {
    buf.lse[to_size(i)] = detail::load_lse<M>(t.lse, b, h, qr.row[to_size(i)]);
    M dot = 0;
    for (std::int64_t c = 0; c < d; ++c) {
      dot += buf.dout[to_size(i * d + c)] * buf.out[to_size(i * d + c)];
    }
    buf.delta[to_size(i)] = dot;
  }
  std::fill(buf.dq.begin(), buf.dq.end(), M(0));
}

// One (query tile, key tile): query rows [i0, i0 + bq), key rows [j0, j0 + bk), not hidden.
struct Tile {
  std::int64_t i0, bq, j0, bk;
  detail::TileMask mask;
};

// P = exp(scale Q K^T - lse) (masked: 0), dV += P^T dO, dP = dO V^T, dS = P (dP - D),
// dQ += scale dS K, dK += scale dS^T Q.
template <class M>
void backward_tile(Mask mask, const detail::Rows& qr, const detail::Rows& kr, const Tile& tile,
                   M scale, std::int64_t d, BackwardBuffers<M>& buf) {
  const std::int64_t i0 = tile.i0, bq = tile.bq, j0 = tile.j0, bk = tile.bk;
  const M* q_tile = buf.q.data() + i0 * d;
  const M* do_tile = buf.dout.data() + i0 * d;
  const M* k_tile = buf.k.data() + j0 * d;
  const M* v_tile = buf.v.data() + j0 * d;
  M* p = buf.p.data();
  M* ds = buf.ds.data();
  detail::blas_gemm(false, true, bq, bk, d, scale, q_tile, d, k_tile, d, M(0), p, bk);
  for (std::int64_t i = 0; i < bq; ++i) {
    const std::int64_t qpos = qr.position[to_size(i0 + i)];
    const M row_lse = buf.lse[to_size(i0 + i)];
    M* prow = p + i * bk;
    for (std::int64_t j = 0; j < bk; ++j) {
      const bool visible = tile.mask == detail::TileMask::full ||
                           key_visible(mask, qpos, kr.position[to_size(j0 + j)]);
      prow[j] = visible ? attention_probability(prow[j], row_lse) : M(0);
    }
  }
  // dV [bk, d] += P^T [bk, bq] dO [bq, d]
  detail::blas_gemm(true, false, bk, d, bq, M(1), p, bk, do_tile, d, M(1), buf.dv.data() + j0 * d,
                    d);
  // dP [bq, bk] = dO [bq, d] V^T [d, bk]
  detail::blas_gemm(false, true, bq, bk, d, M(1), do_tile, d, v_tile, d, M(0), ds, bk);
  for (std::int64_t i = 0; i < bq; ++i) {
    const M row_delta = buf.delta[to_size(i0 + i)];
    for (std::int64_t j = 0; j < bk; ++j) {
      ds[i * bk + j] = p[i * bk + j] * (ds[i * bk + j] - row_delta);
    }
  }
  // dQ [bq, d] += scale dS [bq, bk] K [bk, d]
  detail::blas_gemm(false, false, bq, d, bk, scale, ds, bk, k_tile, d, M(1), buf.dq.data() + i0 * d,
                    d);
  // dK [bk, d] += scale dS^T [bk, bq] Q [bq, d]
  detail::blas_gemm(true, false, bk, d, bq, scale, ds, bk, q_tile, d, M(1), buf.dk.data() + j0 * d,
                    d);
}

template <class M>
void backward_in(const AttentionBlock& block, double scale_d, const Operands& t) {
  const detail::Rows qr = detail::expand_rows(block.q, t.q.tokens, "query");
  const detail::Rows kr = detail::expand_rows(block.k, t.k.tokens, "key");
  const std::int64_t nq = qr.size(), nk = kr.size(), d = t.q.head_dim;
  if (nq == 0 || nk == 0) return;
  const M scale = static_cast<M>(scale_d);
  BackwardBuffers<M> buf(nq, nk, d);

  for (std::int64_t b = 0; b < t.q.batch; ++b) {
    for (std::int64_t hk = 0; hk < t.k.heads; ++hk) {
      detail::gather(t.k, b, hk, kr, 0, nk, buf.k.data());
      detail::gather(t.v, b, hk, kr, 0, nk, buf.v.data());
      std::fill(buf.dk.begin(), buf.dk.end(), M(0));
      std::fill(buf.dv.begin(), buf.dv.end(), M(0));
      for (std::int64_t h = 0; h < t.q.heads; ++h) {
        if (kv_head_of(h, t.q.heads, t.k.heads) != hk) continue;
        load_query_head(t, b, h, qr, d, buf);
        for (std::int64_t i0 = 0; i0 < nq; i0 += kQueryTile) {
          const std::int64_t bq = std::min(kQueryTile, nq - i0);
          const detail::PositionSpan qspan = detail::position_span(qr, i0, bq);
          for (std::int64_t j0 = 0; j0 < nk; j0 += kKeyTile) {
            const std::int64_t bk = std::min(kKeyTile, nk - j0);
            const detail::TileMask tile =
                detail::classify_tile(block.mask, qspan, detail::position_span(kr, j0, bk));
            if (tile == detail::TileMask::hidden) continue;
            backward_tile(block.mask, qr, kr, Tile{i0, bq, j0, bk, tile}, scale, d, buf);
          }
        }
        detail::scatter(buf.dq.data(), t.dq, b, h, qr, 0, nq, Store::accumulate);
      }
      detail::scatter(buf.dk.data(), t.dk, b, hk, kr, 0, nk, Store::accumulate);
      detail::scatter(buf.dv.data(), t.dv, b, hk, kr, 0, nk, Store::accumulate);
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
