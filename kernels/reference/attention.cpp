// Reference attention: float64 loops, an explicit score matrix per block of query rows and a
// two-pass softmax per row. Query rows are taken kQueryBlock at a time so that each key and value
// row is read once per block instead of once per query (the loops stay plain; only their order
// is chosen for the cache).
#include "kernels/reference/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace meshsim::kernels::reference {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr std::int64_t kQueryBlock = 16;

std::size_t u(std::int64_t x) {
  return static_cast<std::size_t>(x);
}

// The indexing of one problem and the loops both directions share.
struct Problem {
  const AttentionDims& dims;
  std::int64_t nq, nk, d;
  double scale;
  std::span<const std::int64_t> q_pos, k_pos;
  bool keys_sorted;  // k_pos ascending: a causal row's visible keys are a prefix

  Problem(const AttentionDims& dm, std::span<const std::int64_t> qp,
          std::span<const std::int64_t> kp)
      : dims(dm),
        nq(static_cast<std::int64_t>(qp.size())),
        nk(static_cast<std::int64_t>(kp.size())),
        d(dm.head_dim),
        scale(dm.scale > 0.0 ? dm.scale : 1.0 / std::sqrt(static_cast<double>(dm.head_dim))),
        q_pos(qp),
        k_pos(kp),
        keys_sorted(std::is_sorted(kp.begin(), kp.end())) {
    if (dm.batch < 0 || dm.heads_q <= 0 || dm.heads_kv <= 0 || dm.head_dim <= 0 || dm.scale < 0.0) {
      throw std::invalid_argument("reference attention: bad dimensions");
    }
  }

  std::size_t q_index(std::int64_t b, std::int64_t i, std::int64_t h) const {
    return u(((b * nq + i) * dims.heads_q + h) * d);
  }
  std::size_t k_index(std::int64_t b, std::int64_t j, std::int64_t hk) const {
    return u(((b * nk + j) * dims.heads_kv + hk) * d);
  }
  std::size_t lse_index(std::int64_t b, std::int64_t h, std::int64_t i) const {
    return u((b * dims.heads_q + h) * nq + i);
  }
  std::size_t q_size() const { return u(dims.batch * nq * dims.heads_q * d); }
  std::size_t k_size() const { return u(dims.batch * nk * dims.heads_kv * d); }
  std::size_t lse_size() const { return u(dims.batch * dims.heads_q * nq); }

  void require(std::span<const double> t, std::size_t size, const char* name) const {
    if (t.size() != size) {
      throw std::invalid_argument(std::string("reference attention: ") + name + " has " +
                                  std::to_string(t.size()) + " elements, expected " +
                                  std::to_string(size));
    }
  }

  // Keys j >= limit are invisible to every query of rows [i0, i1) (a shortcut for sorted keys;
  // visibility is still decided per pair).
  std::int64_t key_limit(std::int64_t i0, std::int64_t i1) const {
    if (dims.mask == Mask::none || !keys_sorted) return nk;
    const std::int64_t last = *std::max_element(q_pos.begin() + i0, q_pos.begin() + i1);
    return std::upper_bound(k_pos.begin(), k_pos.end(), last) - k_pos.begin();
  }

  // The block's rows of x (q, dout or out; head h) copied to a contiguous [rows, d] array.
  void gather(std::span<const double> x, std::int64_t b, std::int64_t h, std::int64_t i0,
              std::int64_t rows, std::vector<double>& xb) const {
    for (std::int64_t i = 0; i < rows; ++i) {
      const double* x_row = x.data() + q_index(b, i0 + i, h);
      std::copy(x_row, x_row + d, xb.begin() + i * d);
    }
  }

  // m[i][j] = xb_i . t_j for the block's rows i and keys j < limit (t: k or v, head hk); m is
  // [rows, nk]. The sums run over c for all kQueryBlock rows at once (xb transposed and padded
  // with zero rows), kQueryBlock independent sums instead of one long dependency chain.
  void products(const std::vector<double>& xb, std::span<const double> t, std::int64_t b,
                std::int64_t hk, std::int64_t rows, std::int64_t limit,
                std::vector<double>& m) const {
    std::vector<double> xt(u(d * kQueryBlock), 0.0);  // [d, kQueryBlock]
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t c = 0; c < d; ++c) xt[u(c * kQueryBlock + i)] = xb[u(i * d + c)];
    }
    for (std::int64_t j = 0; j < limit; ++j) {
      const double* t_row = t.data() + k_index(b, j, hk);
      double dot[kQueryBlock] = {};
      for (std::int64_t c = 0; c < d; ++c) {
        const double tc = t_row[c];
        const double* xc = xt.data() + c * kQueryBlock;
        for (std::int64_t i = 0; i < kQueryBlock; ++i) dot[i] += xc[i] * tc;
      }
      for (std::int64_t i = 0; i < rows; ++i) m[u(i * nk + j)] = dot[i];
    }
  }

  // Scores of the block: scale q_i . k_j, -inf where the mask hides the key.
  void scores(const std::vector<double>& qb, std::span<const double> k, std::int64_t b,
              std::int64_t hk, std::int64_t i0, std::int64_t rows, std::int64_t limit,
              std::vector<double>& s) const {
    products(qb, k, b, hk, rows, limit, s);
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < limit; ++j) {
        double& x = s[u(i * nk + j)];
        x = key_visible(dims.mask, q_pos[u(i0 + i)], k_pos[u(j)]) ? scale * x : kNegInf;
      }
    }
  }

  // Two-pass softmax of row i of s over j < limit into p; returns lse (-inf if no key visible).
  double softmax(const std::vector<double>& s, std::int64_t i, std::int64_t limit,
                 std::vector<double>& p) const {
    const double* row = s.data() + i * nk;
    double* prow = p.data() + i * nk;
    double max = kNegInf;
    for (std::int64_t j = 0; j < limit; ++j) max = std::max(max, row[j]);
    if (max == kNegInf) {
      std::fill(prow, prow + limit, 0.0);
      return kNegInf;
    }
    double sum = 0.0;
    for (std::int64_t j = 0; j < limit; ++j) sum += std::exp(row[j] - max);
    const double lse = max + std::log(sum);
    for (std::int64_t j = 0; j < limit; ++j) prow[j] = std::exp(row[j] - lse);
    return lse;
  }
};

// The workspace of one block of query rows in the backward.
struct BackwardScratch {
  std::vector<double> s, p, dp;  // [kQueryBlock, nk]: scores (then dS), P, dP
  std::vector<double> delta;     // [kQueryBlock]
  // the block's q, dout, out rows and its dq accumulator, contiguous; one key's dk, dv sums
  std::vector<double> qb, dob, ob, dqb;
  std::vector<double> dk_j, dv_j;

  explicit BackwardScratch(const Problem& pr)
      : s(u(kQueryBlock * pr.nk)),
        p(s.size()),
        dp(s.size()),
        delta(u(kQueryBlock)),
        qb(u(kQueryBlock * pr.d)),
        dob(qb.size()),
        ob(qb.size()),
        dqb(qb.size()),
        dk_j(u(pr.d)),
        dv_j(u(pr.d)) {}
};

// One block of query rows: batch b, query head h (K/V head hk), rows [i0, i0 + rows), keys
// j < limit.
struct QueryBlock {
  std::int64_t b, h, hk, i0, rows, limit;
};

// P and delta of the block's rows: with lse given, P = exp(s - lse) and delta_i = dout_i . out_i;
// without, the softmax recomputed and delta_i = sum_j P_ij dP_ij.
void probabilities(const Problem& pr, const QueryBlock& blk, std::span<const double> lse,
                   BackwardScratch& w) {
  const bool given = !lse.empty();
  const std::int64_t d = pr.d, limit = blk.limit;
  for (std::int64_t i = 0; i < blk.rows; ++i) {
    double* prow = w.p.data() + i * pr.nk;
    const double* srow = w.s.data() + i * pr.nk;
    const double* dprow = w.dp.data() + i * pr.nk;
    double dl = 0.0;
    if (given) {
      const double row_lse = lse[pr.lse_index(blk.b, blk.h, blk.i0 + i)];
      for (std::int64_t j = 0; j < limit; ++j) {
        prow[j] = srow[j] == kNegInf || row_lse == kNegInf ? 0.0 : std::exp(srow[j] - row_lse);
      }
      for (std::int64_t c = 0; c < d; ++c) dl += w.dob[u(i * d + c)] * w.ob[u(i * d + c)];
    } else {
      pr.softmax(w.s, i, limit, w.p);
      for (std::int64_t j = 0; j < limit; ++j) dl += prow[j] * dprow[j];
    }
    w.delta[u(i)] = dl;
  }
}

// dS = P (dP - delta) in place of s; then, key by key:
// dq_i += scale dS_ij k_j, dk_j += scale dS_ij q_i, dv_j += P_ij dout_i.
void accumulate_grads(const Problem& pr, const QueryBlock& blk, std::span<const double> k,
                      BackwardScratch& w, AttentionGrads& g) {
  const std::int64_t d = pr.d, rows = blk.rows, limit = blk.limit;
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < limit; ++j) {
      w.s[u(i * pr.nk + j)] = w.p[u(i * pr.nk + j)] * (w.dp[u(i * pr.nk + j)] - w.delta[u(i)]);
    }
  }
  std::fill(w.dqb.begin(), w.dqb.end(), 0.0);
  for (std::int64_t j = 0; j < limit; ++j) {
    const double* k_row = k.data() + pr.k_index(blk.b, j, blk.hk);
    std::fill(w.dk_j.begin(), w.dk_j.end(), 0.0);
    std::fill(w.dv_j.begin(), w.dv_j.end(), 0.0);
    for (std::int64_t i = 0; i < rows; ++i) {
      const double pij = w.p[u(i * pr.nk + j)];
      if (pij == 0.0) continue;
      const double ds = pr.scale * w.s[u(i * pr.nk + j)];
      for (std::int64_t c = 0; c < d; ++c) {
        w.dqb[u(i * d + c)] += ds * k_row[c];
        w.dk_j[u(c)] += ds * w.qb[u(i * d + c)];
        w.dv_j[u(c)] += pij * w.dob[u(i * d + c)];
      }
    }
    double* dk_row = g.dk.data() + pr.k_index(blk.b, j, blk.hk);
    double* dv_row = g.dv.data() + pr.k_index(blk.b, j, blk.hk);
    for (std::int64_t c = 0; c < d; ++c) {
      dk_row[c] += w.dk_j[u(c)];
      dv_row[c] += w.dv_j[u(c)];
    }
  }
  for (std::int64_t i = 0; i < rows; ++i) {
    double* dq_row = g.dq.data() + pr.q_index(blk.b, blk.i0 + i, blk.h);
    for (std::int64_t c = 0; c < d; ++c) dq_row[c] += w.dqb[u(i * d + c)];
  }
}

// The backward in either form: textbook (lse empty: softmax recomputed, delta_i = sum_j P dP) or
// FlashAttention's (P = exp(s - lse), delta_i = dout_i . out_i).
AttentionGrads backward(const Problem& pr, std::span<const double> q, std::span<const double> k,
                        std::span<const double> v, std::span<const double> dout,
                        std::span<const double> out, std::span<const double> lse) {
  const AttentionDims& dims = pr.dims;
  const bool given = !lse.empty();
  pr.require(q, pr.q_size(), "q");
  pr.require(k, pr.k_size(), "k");
  pr.require(v, pr.k_size(), "v");
  pr.require(dout, pr.q_size(), "dout");
  if (given) {
    pr.require(out, pr.q_size(), "out");
    pr.require(lse, pr.lse_size(), "lse");
  }
  AttentionGrads g{std::vector<double>(pr.q_size()), std::vector<double>(pr.k_size()),
                   std::vector<double>(pr.k_size())};
  BackwardScratch w(pr);
  for (std::int64_t b = 0; b < dims.batch; ++b) {
    for (std::int64_t h = 0; h < dims.heads_q; ++h) {
      const std::int64_t hk = kv_head_of(h, dims.heads_q, dims.heads_kv);
      for (std::int64_t i0 = 0; i0 < pr.nq; i0 += kQueryBlock) {
        const std::int64_t rows = std::min(kQueryBlock, pr.nq - i0);
        const QueryBlock blk{b, h, hk, i0, rows, pr.key_limit(i0, i0 + rows)};
        pr.gather(q, b, h, i0, rows, w.qb);
        pr.gather(dout, b, h, i0, rows, w.dob);
        pr.scores(w.qb, k, b, hk, i0, rows, blk.limit, w.s);
        pr.products(w.dob, v, b, hk, rows, blk.limit, w.dp);  // dP_ij = dout_i . v_j
        if (given) pr.gather(out, b, h, i0, rows, w.ob);
        probabilities(pr, blk, lse, w);
        accumulate_grads(pr, blk, k, w, g);
      }
    }
  }
  return g;
}

}  // namespace

AttentionOutput attention_forward(const AttentionDims& dims, std::span<const double> q,
                                  std::span<const double> k, std::span<const double> v,
                                  std::span<const std::int64_t> q_pos,
                                  std::span<const std::int64_t> k_pos) {
  const Problem pr(dims, q_pos, k_pos);
  pr.require(q, pr.q_size(), "q");
  pr.require(k, pr.k_size(), "k");
  pr.require(v, pr.k_size(), "v");
  AttentionOutput r{std::vector<double>(pr.q_size()), std::vector<double>(pr.lse_size())};
  const std::int64_t d = pr.d;
  std::vector<double> s(u(kQueryBlock * pr.nk)), p(s.size());
  std::vector<double> qb(u(kQueryBlock * d)), ob(qb.size());
  for (std::int64_t b = 0; b < dims.batch; ++b) {
    for (std::int64_t h = 0; h < dims.heads_q; ++h) {
      const std::int64_t hk = kv_head_of(h, dims.heads_q, dims.heads_kv);
      for (std::int64_t i0 = 0; i0 < pr.nq; i0 += kQueryBlock) {
        const std::int64_t rows = std::min(kQueryBlock, pr.nq - i0);
        const std::int64_t limit = pr.key_limit(i0, i0 + rows);
        pr.gather(q, b, h, i0, rows, qb);
        pr.scores(qb, k, b, hk, i0, rows, limit, s);
        for (std::int64_t i = 0; i < rows; ++i) {
          r.lse[pr.lse_index(b, h, i0 + i)] = pr.softmax(s, i, limit, p);
        }
        // out_i = sum_j P_ij v_j
        std::fill(ob.begin(), ob.end(), 0.0);
        for (std::int64_t j = 0; j < limit; ++j) {
          const double* v_row = v.data() + pr.k_index(b, j, hk);
          for (std::int64_t i = 0; i < rows; ++i) {
            const double pij = p[u(i * pr.nk + j)];
            if (pij == 0.0) continue;
            for (std::int64_t c = 0; c < d; ++c) ob[u(i * d + c)] += pij * v_row[c];
          }
        }
        for (std::int64_t i = 0; i < rows; ++i) {
          std::copy(ob.begin() + i * d, ob.begin() + (i + 1) * d,
                    r.out.begin() + static_cast<std::ptrdiff_t>(pr.q_index(b, i0 + i, h)));
        }
      }
    }
  }
  return r;
}

AttentionGrads attention_backward(const AttentionDims& dims, std::span<const double> q,
                                  std::span<const double> k, std::span<const double> v,
                                  std::span<const double> dout, std::span<const std::int64_t> q_pos,
                                  std::span<const std::int64_t> k_pos) {
  return backward(Problem(dims, q_pos, k_pos), q, k, v, dout, {}, {});
}

AttentionGrads attention_block_backward(const AttentionDims& dims, std::span<const double> q,
                                        std::span<const double> k, std::span<const double> v,
                                        std::span<const double> out, std::span<const double> dout,
                                        std::span<const double> lse,
                                        std::span<const std::int64_t> q_pos,
                                        std::span<const std::int64_t> k_pos) {
  if (lse.empty() && !q_pos.empty()) {
    throw std::invalid_argument("reference attention: the block backward needs lse");
  }
  return backward(Problem(dims, q_pos, k_pos), q, k, v, dout, out, lse);
}

FullAttention full_attention(const AttentionDims& dims, std::int64_t seq, std::span<const double> q,
                             std::span<const double> k, std::span<const double> v,
                             std::span<const double> dout) {
  std::vector<std::int64_t> pos(u(seq));
  for (std::int64_t i = 0; i < seq; ++i) pos[u(i)] = i;
  AttentionOutput fwd = attention_forward(dims, q, k, v, pos, pos);
  AttentionGrads bwd = attention_backward(dims, q, k, v, dout, pos, pos);
  return FullAttention{std::move(fwd.out), std::move(fwd.lse), std::move(bwd.dq), std::move(bwd.dk),
                       std::move(bwd.dv)};
}

void lse_merge(std::int64_t rows, std::int64_t width, std::span<double> out_a,
               std::span<double> lse_a, std::span<const double> out_b,
               std::span<const double> lse_b) {
  if (out_a.size() != u(rows * width) || out_b.size() != u(rows * width) ||
      lse_a.size() != u(rows) || lse_b.size() != u(rows)) {
    throw std::invalid_argument("reference::lse_merge: sizes do not match rows x width");
  }
  for (std::int64_t i = 0; i < rows; ++i) {
    const double a = lse_a[u(i)], b = lse_b[u(i)];
    const double lse = std::log(std::exp(a) + std::exp(b));
    const double wa = a == kNegInf ? 0.0 : std::exp(a - lse);
    const double wb = b == kNegInf ? 0.0 : std::exp(b - lse);
    for (std::int64_t c = 0; c < width; ++c) {
      out_a[u(i * width + c)] = wa * out_a[u(i * width + c)] + wb * out_b[u(i * width + c)];
    }
    lse_a[u(i)] = lse;
  }
}

}  // namespace meshsim::kernels::reference
