#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/moe.hpp"

using namespace meshsim::kernels::cpu;

TEST_CASE("router_topk: top-k of the logits, softmax over the selected, ties to the lower index") {
  // logits {1, 3, 2}, k = 2: experts 1 and 2, weights softmax(3, 2) = e/(e+1), 1/(e+1).
  const std::vector<double> logits{1, 3, 2};
  std::vector<std::int32_t> expert(2);
  std::vector<double> weight(2);
  router_topk<double>(logits, {}, 1, 3, 2, expert, weight);
  CHECK(expert == std::vector<std::int32_t>{1, 2});
  CHECK(weight[0] == doctest::Approx(std::exp(1.0) / (std::exp(1.0) + 1)).epsilon(1e-15));
  CHECK(weight[1] == doctest::Approx(1 / (std::exp(1.0) + 1)).epsilon(1e-15));
  // bias {2, 0, 0}: the row becomes {3, 3, 2}; the tie goes to expert 0, weights 1/2 each.
  const std::vector<double> bias{2, 0, 0};
  router_topk<double>(logits, bias, 1, 3, 2, expert, weight);
  CHECK(expert == std::vector<std::int32_t>{0, 1});
  CHECK(weight[0] == 0.5);
  CHECK(weight[1] == 0.5);
}

TEST_CASE("router_topk_backward: the softmax Jacobian over the selected logits") {
  // w {0.75, 0.25}, dw {1, 0}: sum w dw = 0.75; dlogit = w (dw - 0.75) = {0.1875, -0.1875}
  // at experts {2, 0}; expert 1 (not selected) gets 0.
  const std::vector<std::int32_t> expert{2, 0};
  const std::vector<float> w{0.75f, 0.25f}, dw{1.0f, 0.0f};
  std::vector<float> dlogits(3, 9.0f);
  router_topk_backward<float>(expert, w, dw, 1, 3, 2, dlogits);
  CHECK(dlogits == std::vector<float>{-0.1875f, 0.0f, 0.1875f});
}

TEST_CASE("permutation_by_expert: a stable counting sort of the token copies") {
  // experts {2, 0, 2, 1}: counts {1, 1, 2}; order: copy 1 (expert 0), 3 (1), 0 and 2 (2).
  const std::vector<std::int32_t> expert{2, 0, 2, 1};
  std::vector<std::int64_t> order(4), counts(3);
  CHECK(permutation_by_expert(expert, 3, order, counts) == 4);
  CHECK(counts == std::vector<std::int64_t>{1, 1, 2});
  CHECK(order == std::vector<std::int64_t>{1, 3, 0, 2});
  // Copy 2 dropped (-1): 3 kept, order 1, 3, 0.
  const std::vector<std::int32_t> with_drop{2, 0, -1, 1};
  CHECK(permutation_by_expert(with_drop, 3, order, counts) == 3);
  CHECK(counts == std::vector<std::int64_t>{1, 1, 1});
  CHECK(std::vector<std::int64_t>(order.begin(), order.begin() + 3) ==
        std::vector<std::int64_t>{1, 3, 0});
}

TEST_CASE("drop_over_capacity keeps each expert's largest router weights") {
  // Expert 0 gets copies 0 (w 0.6), 2 (0.9), 3 (0.6), 5 (0.2); expert 1 copies 1 and 4.
  // Capacity 2: expert 0 keeps copy 2 (0.9) and copy 0 (0.6, the lower of the tied 0 and 3);
  // copies 3 and 5 are dropped; expert 1 keeps both.
  std::vector<std::int32_t> expert{0, 1, 0, 0, 1, 0};
  const std::vector<double> w{0.6, 0.5, 0.9, 0.6, 0.1, 0.2};
  CHECK(drop_over_capacity<double>(expert, w, 2, 2) == 2);
  CHECK(expert == std::vector<std::int32_t>{0, 1, 0, -1, 1, -1});
}

TEST_CASE("gather, scatter and weighted scatter-add of rows") {
  const std::vector<double> src{1, 2, 3, 4};  // rows [1, 2], [3, 4]
  const std::vector<std::int64_t> swap{1, 0};
  std::vector<double> out(4);
  gather_rows<double>(src, 2, swap, out);
  CHECK(out == std::vector<double>{3, 4, 1, 2});
  scatter_rows<double>(src, 2, swap, out);
  CHECK(out == std::vector<double>{3, 4, 1, 2});
  // Both rows into row 1: 0.5·[1, 2] + 2·[3, 4] = [6.5, 9]; without the weights [4, 6] (the
  // unpermute with the router weights dropped gives another answer).
  const std::vector<std::int64_t> same{1, 1};
  std::vector<double> y(4, 0.0);
  const std::vector<double> w{0.5, 2.0};
  scatter_add_rows<double>(src, 2, same, w, y);
  CHECK(y == std::vector<double>{0, 0, 6.5, 9});
  std::fill(y.begin(), y.end(), 0.0);
  scatter_add_rows<double>(src, 2, same, {}, y);
  CHECK(y == std::vector<double>{0, 0, 4, 6});
  // <[1, 2], [3, 4]> = 11, <[3, 4], [3, 4]> = 25.
  std::vector<double> dots(2);
  row_dots<double>(src, 2, same, src, dots);
  CHECK(dots == std::vector<double>{11, 25});
}

TEST_CASE("swiglu forward and backward at hand-computable points") {
  // gate g = ln 3: sigmoid = 3/4, silu = 0.75 ln 3, silu' = 0.75 (1 + 0.25 ln 3); up u = 2.
  // a = 1.5 ln 3; with da = 1: dgate = 2 · 0.75 (1 + 0.25 ln 3), dup = 0.75 ln 3.
  // Second row: g = 0 gives silu 0, so a = 0 whatever u (here 5); dgate = 5 · 0.5, dup = 0.
  const double l3 = std::log(3.0);
  const std::vector<double> h{l3, 2, 0, 5};  // n = 2, f = 1
  std::vector<double> a(2), dh(4);
  swiglu_forward<double>(h, 2, 1, a);
  CHECK(a[0] == doctest::Approx(1.5 * l3).epsilon(1e-14));
  CHECK(a[1] == 0.0);
  const std::vector<double> da{1, 1};
  swiglu_backward<double>(h, da, 2, 1, dh);
  CHECK(dh[0] == doctest::Approx(1.5 * (1 + 0.25 * l3)).epsilon(1e-14));
  CHECK(dh[1] == doctest::Approx(0.75 * l3).epsilon(1e-14));
  CHECK(dh[2] == doctest::Approx(2.5).epsilon(1e-14));
  CHECK(dh[3] == 0.0);
}
