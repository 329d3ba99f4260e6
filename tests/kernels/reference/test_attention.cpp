#include <doctest/doctest.h>

#include <initializer_list>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/reference/attention.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::reference;
using meshsim::kernels::test::max_rel_error;
using meshsim::kernels::test::Rng;

namespace {

std::vector<double> random_values(Rng& rng, std::size_t n) {
  std::vector<double> v(n);
  for (double& x : v) x = rng.uniform();
  return v;
}

std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  return p;
}

}  // namespace

TEST_CASE("reference forward by hand: two keys with scores 0 and log 3") {
  // d = 1, scale 1: q = 1, k = (0, log 3) give weights 1/4, 3/4; v = (4, 8) -> out = 7;
  // lse = log(1 + 3) = log 4. Causal with the query at position 0 hides the second key.
  const AttentionDims dims{1, 1, 1, 1, Mask::none, 1.0};
  const std::vector<double> q{1.0}, k{0.0, std::log(3.0)}, v{4.0, 8.0};
  const std::vector<std::int64_t> qp{1}, kp{0, 1};
  const AttentionOutput r = attention_forward(dims, q, k, v, qp, kp);
  CHECK(r.out[0] == doctest::Approx(7.0).epsilon(1e-15));
  CHECK(r.lse[0] == doctest::Approx(std::log(4.0)).epsilon(1e-15));
  AttentionDims causal = dims;
  causal.mask = Mask::causal;
  const std::vector<std::int64_t> q0{0};
  const AttentionOutput c = attention_forward(causal, q, k, v, q0, kp);
  CHECK(c.out[0] == 4.0);
  CHECK(c.lse[0] == doctest::Approx(0.0));
  const std::vector<std::int64_t> before{-1};
  const AttentionOutput none = attention_forward(causal, q, k, v, before, kp);
  CHECK(none.out[0] == 0.0);
  CHECK(std::isinf(none.lse[0]));
}

TEST_CASE("reference backward equals central finite differences of L = sum dout . out") {
  // dL/dx ~ (L(x + h) - L(x - h)) / 2h with h = 1e-5 for a sample of q, k, v elements; causal,
  // GQA (4 query heads, 2 K/V heads), b = 2, S = 6, d = 3. Agreement to 1e-7 relative.
  Rng rng(11);
  const AttentionDims dims{2, 4, 2, 3, Mask::causal, 0.0};
  const std::int64_t s = 6;
  const std::vector<double> q0 = random_values(rng, 2 * 6 * 4 * 3);
  const std::vector<double> k0 = random_values(rng, 2 * 6 * 2 * 3);
  const std::vector<double> v0 = random_values(rng, 2 * 6 * 2 * 3);
  const std::vector<double> dout = random_values(rng, q0.size());
  const FullAttention g = full_attention(dims, s, q0, k0, v0, dout);
  const auto loss = [&](const std::vector<double>& q, const std::vector<double>& k,
                        const std::vector<double>& v) {
    const AttentionOutput o = attention_forward(dims, q, k, v, iota(s), iota(s));
    double l = 0.0;
    for (std::size_t i = 0; i < o.out.size(); ++i) l += dout[i] * o.out[i];
    return l;
  };
  const double h = 1e-5;
  for (std::size_t i = 0; i < q0.size(); i += 5) {
    std::vector<double> up = q0, down = q0;
    up[i] += h;
    down[i] -= h;
    CHECK(g.dq[i] ==
          doctest::Approx((loss(up, k0, v0) - loss(down, k0, v0)) / (2 * h)).epsilon(1e-7));
  }
  for (std::size_t i = 0; i < k0.size(); i += 3) {
    std::vector<double> up = k0, down = k0;
    up[i] += h;
    down[i] -= h;
    CHECK(g.dk[i] ==
          doctest::Approx((loss(q0, up, v0) - loss(q0, down, v0)) / (2 * h)).epsilon(1e-7));
    up = v0;
    down = v0;
    up[i] += h;
    down[i] -= h;
    CHECK(g.dv[i] ==
          doctest::Approx((loss(q0, k0, up) - loss(q0, k0, down)) / (2 * h)).epsilon(1e-7));
  }
}

TEST_CASE("reference: GQA equals multi-head attention with each K/V head repeated") {
  // Hq = 4, Hkv = 2: heads 0, 1 read K/V head 0 and heads 2, 3 read head 1. Repeating K/V heads
  // to [.., 4, d] and running MHA gives the same out and lse; dK/dV of GQA are the sums over each
  // group of the MHA gradients. Exact up to summation order: 1e-14.
  Rng rng(12);
  const std::int64_t s = 5, d = 2;
  const std::vector<double> q = random_values(rng, s * 4 * d);
  const std::vector<double> k = random_values(rng, s * 2 * d);
  const std::vector<double> v = random_values(rng, s * 2 * d);
  const std::vector<double> dout = random_values(rng, q.size());
  std::vector<double> k4(q.size()), v4(q.size());
  for (std::int64_t t = 0; t < s; ++t) {
    for (std::int64_t h = 0; h < 4; ++h) {
      for (std::int64_t c = 0; c < d; ++c) {
        k4[static_cast<std::size_t>((t * 4 + h) * d + c)] =
            k[static_cast<std::size_t>((t * 2 + h / 2) * d + c)];
        v4[static_cast<std::size_t>((t * 4 + h) * d + c)] =
            v[static_cast<std::size_t>((t * 2 + h / 2) * d + c)];
      }
    }
  }
  const FullAttention gqa = full_attention({1, 4, 2, d, Mask::causal, 0.0}, s, q, k, v, dout);
  const FullAttention mha = full_attention({1, 4, 4, d, Mask::causal, 0.0}, s, q, k4, v4, dout);
  CHECK(max_rel_error(gqa.out, mha.out) <= 1e-14);
  CHECK(max_rel_error(gqa.lse, mha.lse) <= 1e-14);
  CHECK(max_rel_error(gqa.dq, mha.dq) <= 1e-14);
  std::vector<double> dk_sum(k.size(), 0.0);
  for (std::int64_t t = 0; t < s; ++t) {
    for (std::int64_t h = 0; h < 4; ++h) {
      for (std::int64_t c = 0; c < d; ++c) {
        dk_sum[static_cast<std::size_t>((t * 2 + h / 2) * d + c)] +=
            mha.dk[static_cast<std::size_t>((t * 4 + h) * d + c)];
      }
    }
  }
  CHECK(max_rel_error(gqa.dk, dk_sum) <= 1e-14);
}

TEST_CASE("reference: block backwards over a partition of the keys sum to the full backward") {
  // Keys split into [0, 3) and [3, 7); each block's FlashAttention-form gradient uses the full
  // out and lse. dq = sum of the blocks' dq; dk, dv rows come from the block holding the key.
  Rng rng(13);
  const AttentionDims dims{1, 2, 1, 3, Mask::causal, 0.0};
  const std::int64_t s = 7;
  const std::vector<double> q = random_values(rng, s * 2 * 3);
  const std::vector<double> k = random_values(rng, s * 3);
  const std::vector<double> v = random_values(rng, s * 3);
  const std::vector<double> dout = random_values(rng, q.size());
  const FullAttention full = full_attention(dims, s, q, k, v, dout);
  std::vector<double> dq(q.size(), 0.0), dk, dv;
  for (auto [lo, hi] : {std::pair<std::int64_t, std::int64_t>{0, 3}, {3, 7}}) {
    const std::vector<double> kb(k.begin() + lo * 3, k.begin() + hi * 3);
    const std::vector<double> vb(v.begin() + lo * 3, v.begin() + hi * 3);
    std::vector<std::int64_t> kp;
    for (std::int64_t j = lo; j < hi; ++j) kp.push_back(j);
    const AttentionGrads g =
        attention_block_backward(dims, q, kb, vb, full.out, dout, full.lse, iota(s), kp);
    for (std::size_t i = 0; i < dq.size(); ++i) dq[i] += g.dq[i];
    dk.insert(dk.end(), g.dk.begin(), g.dk.end());
    dv.insert(dv.end(), g.dv.begin(), g.dv.end());
  }
  CHECK(max_rel_error(dq, full.dq) <= 1e-13);
  CHECK(max_rel_error(dk, full.dk) <= 1e-13);
  CHECK(max_rel_error(dv, full.dv) <= 1e-13);
}

TEST_CASE("reference lse_merge by hand") {
  // lse_a = log 1, lse_b = log 3: out = out_a / 4 + 3 out_b / 4, lse = log 4.
  std::vector<double> oa{4.0, 0.0}, la{0.0};
  const std::vector<double> ob{8.0, 4.0}, lb{std::log(3.0)};
  lse_merge(1, 2, oa, la, ob, lb);
  CHECK(oa[0] == doctest::Approx(7.0));
  CHECK(oa[1] == doctest::Approx(3.0));
  CHECK(la[0] == doctest::Approx(std::log(4.0)));
  CHECK_THROWS_AS(lse_merge(2, 2, oa, la, ob, lb), std::invalid_argument);
}

TEST_CASE("reference: the backward splits by query rows (how ranks can share the reference)") {
  // Queries [0, 4) and [4, 9) against all 9 keys: each part's dq rows are the full dq's rows, and
  // the parts' dk, dv sum to the full dk, dv (each query row's softmax is independent).
  Rng rng(14);
  const AttentionDims dims{1, 2, 1, 3, Mask::causal, 0.0};
  const std::int64_t s = 9, w = 2 * 3;  // q row width: heads_q * head_dim
  const std::vector<double> q = random_values(rng, s * w);
  const std::vector<double> k = random_values(rng, s * 3);
  const std::vector<double> v = random_values(rng, s * 3);
  const std::vector<double> dout = random_values(rng, q.size());
  const FullAttention full = full_attention(dims, s, q, k, v, dout);
  std::vector<double> dq, dk(k.size(), 0.0), dv(v.size(), 0.0), out;
  for (auto [lo, hi] : {std::pair<std::int64_t, std::int64_t>{0, 4}, {4, 9}}) {
    const std::vector<double> qp(q.begin() + lo * w, q.begin() + hi * w);
    const std::vector<double> dp(dout.begin() + lo * w, dout.begin() + hi * w);
    std::vector<std::int64_t> pos;
    for (std::int64_t i = lo; i < hi; ++i) pos.push_back(i);
    const AttentionOutput o = attention_forward(dims, qp, k, v, pos, iota(s));
    const AttentionGrads g = attention_backward(dims, qp, k, v, dp, pos, iota(s));
    out.insert(out.end(), o.out.begin(), o.out.end());
    dq.insert(dq.end(), g.dq.begin(), g.dq.end());
    for (std::size_t i = 0; i < dk.size(); ++i) {
      dk[i] += g.dk[i];
      dv[i] += g.dv[i];
    }
  }
  CHECK(max_rel_error(out, full.out) <= 1e-15);
  CHECK(max_rel_error(dq, full.dq) <= 1e-15);
  CHECK(max_rel_error(dk, full.dk) <= 1e-14);
  CHECK(max_rel_error(dv, full.dv) <= 1e-14);
}
