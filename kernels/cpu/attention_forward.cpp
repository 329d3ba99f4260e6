// attention_forward: per (batch, K/V head), the K/V rows are gathered once; per query head of the
// group and query tile, the key tiles are folded in with the online softmax:
//   S = scale Q K^T (BLAS), masked scores -inf, running max/sum per row (softmax_rescale),
//   O = factor O + exp(S - max) V (BLAS), and at the end out = O / sum, lse = max + log(sum).
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/attention_rows.hpp"
#include "kernels/cpu/blas.hpp"

namespace meshsim::kernels::cpu {
namespace {

using detail::kKeyTile;
using detail::kQueryTile;

template <class M>
void forward_in(const AttentionBlock& block, double scale_d, const HeadsView& q, const HeadsView& k,
                const HeadsView& v, const HeadsView& out, const LseView& lse) {
  const detail::Rows qr = detail::expand_rows(block.q, q.tokens, "query");
  const detail::Rows kr = detail::expand_rows(block.k, k.tokens, "key");
  const std::int64_t nq = qr.size(), nk = kr.size(), d = q.head_dim;
  if (nq == 0) return;
  const M scale = static_cast<M>(scale_d);
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  std::vector<M> kbuf(n(nk * d)), vbuf(n(nk * d)), qbuf(n(nq * d));
  std::vector<M> obuf(n(kQueryTile * d)), sbuf(n(kQueryTile * kKeyTile));
  std::vector<SoftmaxRow<M>> rows(n(kQueryTile));
  std::vector<M> lse_rows(n(kQueryTile));

  for (std::int64_t b = 0; b < q.batch; ++b) {
    for (std::int64_t hk = 0; hk < k.heads; ++hk) {
      detail::gather(k, b, hk, kr, 0, nk, kbuf.data());
      detail::gather(v, b, hk, kr, 0, nk, vbuf.data());
      for (std::int64_t h = 0; h < q.heads; ++h) {
        if (kv_head_of(h, q.heads, k.heads) != hk) continue;
        detail::gather(q, b, h, qr, 0, nq, qbuf.data());
        for (std::int64_t i0 = 0; i0 < nq; i0 += kQueryTile) {
          const std::int64_t bq = std::min(kQueryTile, nq - i0);
          const detail::PositionSpan qspan = detail::position_span(qr, i0, bq);
          std::fill(rows.begin(), rows.end(), SoftmaxRow<M>{});
          std::fill(obuf.begin(), obuf.end(), M(0));
          for (std::int64_t j0 = 0; j0 < nk; j0 += kKeyTile) {
            const std::int64_t bk = std::min(kKeyTile, nk - j0);
            const detail::TileMask tile =
                detail::classify_tile(block.mask, qspan, detail::position_span(kr, j0, bk));
            if (tile == detail::TileMask::hidden) continue;
            M* s = sbuf.data();
            detail::blas_gemm(false, true, bq, bk, d, scale, qbuf.data() + i0 * d, d,
                              kbuf.data() + j0 * d, d, M(0), s, bk);
            for (std::int64_t i = 0; i < bq; ++i) {
              M* srow = s + i * bk;
              if (tile == detail::TileMask::partial) {
                const std::int64_t qpos = qr.position[n(i0 + i)];
                for (std::int64_t j = 0; j < bk; ++j) {
                  if (!key_visible(block.mask, qpos, kr.position[n(j0 + j)])) {
                    srow[j] = negative_infinity<M>();
                  }
                }
              }
              M tile_max = negative_infinity<M>();
              for (std::int64_t j = 0; j < bk; ++j) tile_max = std::max(tile_max, srow[j]);
              SoftmaxRow<M>& row = rows[n(i)];
              const M factor = softmax_rescale(row, tile_max);
              if (factor != M(1)) {
                M* orow = obuf.data() + i * d;
                for (std::int64_t c = 0; c < d; ++c) orow[c] *= factor;
              }
              M sum = 0;
              for (std::int64_t j = 0; j < bk; ++j) {
                srow[j] = softmax_weight(srow[j], row.max);
                sum += srow[j];
              }
              row.sum += sum;
            }
            detail::blas_gemm(false, false, bq, d, bk, M(1), s, bk, vbuf.data() + j0 * d, d, M(1),
                              obuf.data(), d);
          }
          for (std::int64_t i = 0; i < bq; ++i) {
            const SoftmaxRow<M>& row = rows[n(i)];
            const M inv = row.sum > M(0) ? M(1) / row.sum : M(0);
            M* orow = obuf.data() + i * d;
            for (std::int64_t c = 0; c < d; ++c) orow[c] *= inv;
            lse_rows[n(i)] = softmax_lse(row);
          }
          detail::scatter(obuf.data(), out, b, h, qr, i0, bq, Store::overwrite);
          for (std::int64_t i = 0; i < bq; ++i) {
            detail::store_lse(lse, b, h, qr.row[n(i0 + i)], lse_rows[n(i)]);
          }
        }
      }
    }
  }
}

}  // namespace

void attention_forward(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                       const HeadsView& v, const HeadsView& out, const LseView& lse) {
  const double scale = detail::check_block(block, q, k, v);
  detail::check_same_extents(out, q, "out");
  detail::check_lse(lse, q, "lse");
  if (math_in_double(q.type, k.type, v.type)) {
    forward_in<double>(block, scale, q, k, v, out, lse);
  } else {
    forward_in<float>(block, scale, q, k, v, out, lse);
  }
}

}  // namespace meshsim::kernels::cpu
