#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/attention_math.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;

TEST_CASE("mask: key j visible to query i when j <= i (global positions)") {
  CHECK(key_visible(Mask::causal, 10, 10));
  CHECK(key_visible(Mask::causal, 10, 3));
  CHECK_FALSE(key_visible(Mask::causal, 10, 11));
  CHECK(key_visible(Mask::none, 10, 11));
}

TEST_CASE("grouped-query attention: head h reads K/V head floor(h * Hkv / Hq)") {
  CHECK(kv_head_of(0, 8, 2) == 0);
  CHECK(kv_head_of(3, 8, 2) == 0);  // 3 * 2 / 8 = 0
  CHECK(kv_head_of(4, 8, 2) == 1);  // 4 * 2 / 8 = 1
  CHECK(kv_head_of(7, 8, 2) == 1);
  CHECK(kv_head_of(5, 8, 8) == 5);  // multi-head
  CHECK(kv_head_of(7, 8, 1) == 0);  // multi-query
}

TEST_CASE("online softmax over tiles equals the direct softmax of the whole row") {
  // Direct: lse = log sum_j e^s_j, out = sum_j e^(s_j - lse) v_j. Online: tiles of 3 scores,
  // rescaling the running sum and output by softmax_rescale's factor. Equal to 1e-14 relative.
  meshsim::kernels::test::Rng rng(3);
  std::vector<double> s(10), v(10);
  for (std::size_t j = 0; j < s.size(); ++j) {
    s[j] = rng.uniform(-20, 20);
    v[j] = rng.uniform();
  }
  s[4] = negative_infinity<double>();  // a masked key
  double direct_sum = 0.0, direct_out = 0.0;
  for (std::size_t j = 0; j < s.size(); ++j) direct_sum += std::exp(s[j]);
  const double direct_lse = std::log(direct_sum);
  for (std::size_t j = 0; j < s.size(); ++j) direct_out += std::exp(s[j] - direct_lse) * v[j];

  SoftmaxRow<double> row;
  double out = 0.0;
  for (std::size_t j0 = 0; j0 < s.size(); j0 += 3) {
    double tile_max = negative_infinity<double>();
    for (std::size_t j = j0; j < std::min(j0 + 3, s.size()); ++j)
      tile_max = std::max(tile_max, s[j]);
    out *= softmax_rescale(row, tile_max);
    for (std::size_t j = j0; j < std::min(j0 + 3, s.size()); ++j) {
      const double w = softmax_weight(s[j], row.max);
      row.sum += w;
      out += w * v[j];
    }
  }
  CHECK(softmax_lse(row) == doctest::Approx(direct_lse).epsilon(1e-14));
  CHECK(out / row.sum == doctest::Approx(direct_out).epsilon(1e-14));
}

TEST_CASE("online softmax: a row with no visible key has lse -inf and weight 0") {
  SoftmaxRow<float> row;
  CHECK(softmax_rescale(row, negative_infinity<float>()) == 1.0f);
  CHECK(softmax_weight(negative_infinity<float>(), row.max) == 0.0f);
  CHECK(softmax_lse(row) == negative_infinity<float>());
  CHECK(attention_probability(0.5f, negative_infinity<float>()) == 0.0f);
  CHECK(attention_probability(negative_infinity<float>(), 1.0f) == 0.0f);
  CHECK(attention_probability(1.0f, 1.0f) == 1.0f);
}

TEST_CASE("lse merge: log(e^a + e^b) and weights e^(x - lse), stable for large values") {
  // a = log 1, b = log 3: lse = log 4, weights 1/4 and 3/4.
  const LseMerge<double> m = lse_merge_weights(0.0, std::log(3.0));
  CHECK(m.lse == doctest::Approx(std::log(4.0)).epsilon(1e-15));
  CHECK(m.weight_a == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(m.weight_b == doctest::Approx(0.75).epsilon(1e-15));
  // e^1000 overflows a naive sum; the stable form gives 1000 + log 2 and equal weights.
  const LseMerge<float> big = lse_merge_weights(1000.0f, 1000.0f);
  CHECK(big.lse == doctest::Approx(1000.0 + std::log(2.0)));
  CHECK(big.weight_a == doctest::Approx(0.5));
  // merging with an empty partial result (-inf) leaves the other one unchanged
  const LseMerge<float> one = lse_merge_weights(negative_infinity<float>(), 2.5f);
  CHECK(one.lse == 2.5f);
  CHECK(one.weight_a == 0.0f);
  CHECK(one.weight_b == 1.0f);
  const LseMerge<float> none =
      lse_merge_weights(negative_infinity<float>(), negative_infinity<float>());
  CHECK(none.lse == negative_infinity<float>());
  CHECK(none.weight_a == 0.0f);
  CHECK(none.weight_b == 0.0f);
}
