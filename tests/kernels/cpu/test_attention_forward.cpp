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
  ScalarType in;   // q, k, v
  ScalarType out;  // out (lse is fp32, fp64 with fp64 inputs)
  Mask mask;
  std::int64_t heads_q, heads_kv, head_dim;
};

// Query rows: 140 rows at positions 1000.., 60 at 50.. and 3 at -5.. (which see no key under the
// causal mask); key rows: 300 at positions 0.. and 40 at 1100... nq = 203 and nk = 340 span two
// query tiles and two key tiles, with hidden, full and partial tiles under the causal mask.
const std::vector<RowSpan> kQueryRows{{5, 1000, 140}, {200, 50, 60}, {280, -5, 3}};
const std::vector<RowSpan> kKeyRows{{0, 0, 300}, {310, 1100, 40}};
constexpr std::int64_t kQueryTokens = 290, kKeyTokens = 360, kBatch = 2;

void run_case(const Case& c, std::uint64_t seed) {
  CAPTURE(to_string(c.in));
  CAPTURE(to_string(c.out));
  CAPTURE(c.mask == Mask::causal);
  CAPTURE(c.heads_q);
  CAPTURE(c.heads_kv);
  Rng rng(seed);
  const Extents qe{kBatch, kQueryTokens, c.heads_q, c.head_dim};
  const Extents ke{kBatch, kKeyTokens, c.heads_kv, c.head_dim};
  const ScalarType lse_type = c.in == ScalarType::fp64 ? ScalarType::fp64 : ScalarType::fp32;
  Buffer q = random_buffer(c.in, qe.size(), rng, -2.0, 2.0);
  Buffer kv = random_buffer(c.in, 2 * ke.size(), rng, -2.0, 2.0);  // packed [2, b, t, h, d]
  Buffer out(c.out, qe.size());
  Buffer lse(lse_type, kBatch * c.heads_q * kQueryTokens);
  out.fill(7.0);  // sentinels: rows outside the block must keep them
  lse.fill(7.0);

  const KvViews kvv = kv_views(kv.data(), c.in, kBatch, kKeyTokens, c.heads_kv, c.head_dim);
  const AttentionBlock block{c.mask, kQueryRows, kKeyRows, 0.0};
  attention_forward(block, heads_view(q.data(), c.in, kBatch, kQueryTokens, c.heads_q, c.head_dim),
                    kvv.k, kvv.v,
                    heads_view(out.data(), c.out, kBatch, kQueryTokens, c.heads_q, c.head_dim),
                    lse_view(lse.data(), lse_type, kBatch, c.heads_q, kQueryTokens));

  const std::vector<double> kvs = kv.values();
  const std::vector<double> kvals(kvs.begin(), kvs.begin() + ke.size());
  const std::vector<double> vvals(kvs.begin() + ke.size(), kvs.end());
  const reference::AttentionDims dims{kBatch, c.heads_q, c.heads_kv, c.head_dim, c.mask, 0.0};
  const std::vector<std::int64_t> qpos = positions_of(kQueryRows), kpos = positions_of(kKeyRows);
  const reference::AttentionOutput want = reference::attention_forward(
      dims, gather_rows(q.values(), qe, kQueryRows), gather_rows(kvals, ke, kKeyRows),
      gather_rows(vvals, ke, kKeyRows), qpos, kpos);

  // out: max |out - ref| / max |ref| within the output type's tolerance (fp32 math: >= 1e-5).
  const double tol = std::max(tolerance(c.out), tolerance(lse_type));
  CHECK(max_rel_error(gather_rows(out.values(), qe, kQueryRows), want.out) <= tol);
  // lse: finite rows to the same relative tolerance; the 3 rows at negative positions see no key
  // under the causal mask (lse -inf, out 0).
  const std::vector<double> got_lse =
      gather_lse(lse.values(), kBatch, c.heads_q, kQueryTokens, kQueryRows);
  std::vector<double> got_finite, want_finite;
  int empty_rows = 0;
  for (std::size_t i = 0; i < got_lse.size(); ++i) {
    if (std::isinf(want.lse[i])) {
      ++empty_rows;
      CHECK(got_lse[i] == want.lse[i]);
    } else {
      got_finite.push_back(got_lse[i]);
      want_finite.push_back(want.lse[i]);
    }
  }
  CHECK(empty_rows == (c.mask == Mask::causal ? 3 * kBatch * c.heads_q : 0));
  CHECK(max_rel_error(got_finite, want_finite) <= tolerance(lse_type));
  // rows outside the block keep their sentinel
  const std::vector<double> outs = out.values();
  int untouched = 0;
  for (std::int64_t b = 0; b < kBatch; ++b) {
    for (std::int64_t r : {0, 4, 145, 199, 260, 283, 289}) {
      untouched +=
          outs[static_cast<std::size_t>(((b * kQueryTokens + r) * c.heads_q) * c.head_dim)] == 7.0;
    }
  }
  CHECK(untouched == 7 * kBatch);
}

}  // namespace

TEST_CASE("attention_forward equals the float64 reference: masks, GQA, storage types") {
  // The block above, random q/k/v in [-2, 2); reference: reference::attention_forward on the
  // block's rows (two-pass softmax in float64). Tolerances: fp32 1e-5, bf16 out 1e-2, fp64 1e-12.
  std::uint64_t seed = 100;
  for (Mask mask : {Mask::none, Mask::causal}) {
    run_case({ScalarType::fp32, ScalarType::fp32, mask, 4, 2, 16}, ++seed);  // GQA 2 groups
    run_case({ScalarType::fp32, ScalarType::fp32, mask, 3, 3, 8}, ++seed);   // multi-head
    run_case({ScalarType::bf16, ScalarType::fp32, mask, 4, 1, 16}, ++seed);  // multi-query
    run_case({ScalarType::bf16, ScalarType::bf16, mask, 2, 2, 32}, ++seed);
    run_case({ScalarType::fp16, ScalarType::fp32, mask, 2, 1, 16}, ++seed);
    run_case({ScalarType::fp64, ScalarType::fp64, mask, 4, 2, 8}, ++seed);
  }
}

TEST_CASE("attention_forward: a single query and key give out = v and lse = the score") {
  // One key: softmax weight 1, so out = v and lse = scale q.k = (1/sqrt(4)) * (1*2 + 2*0 + ...)
  std::vector<float> q{1, 2, 3, 4}, kv{2, 0, 1, -1, /* v */ 5, 6, 7, 8}, out(4), lse(1);
  const KvViews kvv = kv_views(kv.data(), ScalarType::fp32, 1, 1, 1, 4);
  const AttentionBlock block{Mask::causal, {{0, 3, 1}}, {{0, 3, 1}}, 0.0};
  attention_forward(block, heads_view(q.data(), ScalarType::fp32, 1, 1, 1, 4), kvv.k, kvv.v,
                    heads_view(out.data(), ScalarType::fp32, 1, 1, 1, 4),
                    lse_view(lse.data(), ScalarType::fp32, 1, 1, 1));
  CHECK(out == std::vector<float>{5, 6, 7, 8});
  CHECK(lse[0] == doctest::Approx(0.5 * (2 + 0 + 3 - 4)));  // 0.5
}

TEST_CASE("attention_forward rejects mismatched operands and rows out of range") {
  std::vector<float> buf(64), lse(8);
  const HeadsView q = heads_view(buf.data(), ScalarType::fp32, 1, 4, 2, 4);
  const HeadsView k = heads_view(buf.data(), ScalarType::fp32, 1, 4, 1, 4);
  const HeadsView bad_dim = heads_view(buf.data(), ScalarType::fp32, 1, 4, 1, 2);
  const LseView l = lse_view(lse.data(), ScalarType::fp32, 1, 2, 4);
  const AttentionBlock ok{Mask::none, {{0, 0, 4}}, {{0, 0, 4}}, 0.0};
  CHECK_THROWS_AS(attention_forward(ok, q, bad_dim, bad_dim, q, l), KernelError);
  const AttentionBlock outside{Mask::none, {{2, 0, 3}}, {{0, 0, 4}}, 0.0};  // rows 2..4 of 4
  CHECK_THROWS_AS(attention_forward(outside, q, k, k, q, l), KernelError);
  CHECK_THROWS_AS(
      attention_forward(ok, q, k, k, q, lse_view(lse.data(), ScalarType::fp32, 1, 1, 4)),
      KernelError);
}
