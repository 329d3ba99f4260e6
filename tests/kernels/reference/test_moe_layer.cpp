#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/reference/moe_layer.hpp"

using namespace meshsim::kernels::reference;

TEST_CASE("moe_layer: one token, two experts, top-1, by hand") {
  // x = 1, W_r = {1, 0}: logits {1, 0}, expert 0 with weight 1. W_up[0] = {ln 3, 2} (gate, up),
  // W_down[0] = 3: h = {ln 3, 2}, a = silu(ln 3)·2 = 1.5 ln 3, y = 3a = 4.5 ln 3.
  // Backward, dy = 1: dW_down[0] = a; da = 3; dgate = 3·2·silu'(ln 3) = 4.5 (1 + 0.25 ln 3),
  // dup = 3 silu(ln 3) = 2.25 ln 3; dW_up[0] = {dgate, dup}; dx = ln 3·dgate + 2·dup; with one
  // expert per token the softmax has no gradient: dW_r = 0. Expert 1 gets nothing.
  const double l3 = std::log(3.0);
  MoeLayerDims d;
  d.tokens = 1;
  d.hidden = 1;
  d.ffn = 1;
  d.experts = 2;
  d.top_k = 1;
  const std::vector<double> x{1}, wr{1, 0}, bias{0, 0}, up{l3, 2, 7, 7}, down{3, 7}, dy{1};
  const MoeLayerTensors t = moe_layer(d, x, wr, bias, up, down, dy);
  const double dgate = 4.5 * (1 + 0.25 * l3), dup = 2.25 * l3;
  CHECK(t.y[0] == doctest::Approx(4.5 * l3).epsilon(1e-14));
  CHECK(t.tokens_per_expert == std::vector<std::int64_t>{1, 0});
  CHECK(t.dw_down[0] == doctest::Approx(1.5 * l3).epsilon(1e-14));
  CHECK(t.dw_down[1] == 0.0);
  CHECK(t.dw_up[0] == doctest::Approx(dgate).epsilon(1e-14));
  CHECK(t.dw_up[1] == doctest::Approx(dup).epsilon(1e-14));
  CHECK(t.dw_up[2] == 0.0);
  CHECK(t.dx[0] == doctest::Approx(l3 * dgate + 2 * dup).epsilon(1e-14));
  CHECK(t.dw_router == std::vector<double>{0, 0});
}

TEST_CASE("moe_layer: top-2 weights and the router gradient") {
  // Two experts with h = f = 1, x = 1, W_r = {ln 3, 0}: logits {ln 3, 0}, weights {3/4, 1/4}.
  // Expert e: gate weight 0 makes silu(0) = 0, so both outputs are 0 and y = 0 — unless the up
  // path is active: take gate weights g_e = ln 3 and up 1 for both, W_down = {1, 2}:
  // a = 0.75 ln 3 for both, o = {a, 2a}; y = 3/4 a + 1/4 2a = 1.25 a.
  // dy = 1: dw = {a, 2a}; sum w dw = 1.25 a; dlogit_0 = 3/4 (a - 1.25a) = -0.1875 a,
  // dlogit_1 = 1/4 (2a - 1.25 a) = 0.1875 a; dW_r = dlogit · x.
  const double l3 = std::log(3.0), a = 0.75 * l3;
  MoeLayerDims d;
  d.tokens = 1;
  d.hidden = 1;
  d.ffn = 1;
  d.experts = 2;
  d.top_k = 2;
  const std::vector<double> x{1}, wr{l3, 0}, up{l3, 1, l3, 1}, down{1, 2}, dy{1};
  const MoeLayerTensors t = moe_layer(d, x, wr, {}, up, down, dy);
  CHECK(t.y[0] == doctest::Approx(1.25 * a).epsilon(1e-14));
  CHECK(t.dw_router[0] == doctest::Approx(-0.1875 * a).epsilon(1e-14));
  CHECK(t.dw_router[1] == doctest::Approx(0.1875 * a).epsilon(1e-14));
}

TEST_CASE("moe_layer: the capacity drops a block's lowest weights, not the softmax") {
  // Two tokens, one expert per token (k = 1), both routed to expert 0 (W_r = {1, 0}, x = 1 and
  // 2: logits {1, 0} and {2, 0}), weight 1 each. Capacity 1 per block of 2 tokens: the tie goes
  // to token 0, token 1's copy is dropped, so y_1 = 0 and expert 0 counts 1 copy. With blocks of
  // 1 token each keeps its copy.
  MoeLayerDims d;
  d.tokens = 2;
  d.hidden = 1;
  d.ffn = 1;
  d.experts = 2;
  d.top_k = 1;
  d.capacity = 1;
  d.block_tokens = 2;
  const std::vector<double> x{1, 2}, wr{1, 0}, up{1, 1, 1, 1}, down{1, 1};
  MoeLayerTensors t = moe_layer(d, x, wr, {}, up, down, {});
  CHECK(t.y[0] != 0.0);
  CHECK(t.y[1] == 0.0);
  CHECK(t.dropped == 1);
  CHECK(t.tokens_per_expert == std::vector<std::int64_t>{1, 0});
  d.block_tokens = 1;
  t = moe_layer(d, x, wr, {}, up, down, {});
  CHECK(t.y[1] != 0.0);
  CHECK(t.dropped == 0);
}
