#include <doctest/doctest.h>

#include <chrono>

#include "validate/check/moe_layer_check.hpp"

using namespace meshsim;

namespace {

MoeLayerConfig small_layer() {
  MoeLayerConfig c;
  c.experts = 4;
  c.tokens = 16;
  c.hidden = 8;
  c.ffn = 6;
  return c;
}

std::vector<MoeRankResult> run_solo(const MoeLayerConfig& c, MoeFault fault) {
  const auto comm = make_solo_moe_comm();
  return {run_moe_layer(c, 3, 0, *comm, fault, std::chrono::steady_clock::now())};
}

}  // namespace

TEST_CASE("a rank's result survives packing") {
  const MoeLayerConfig c = small_layer();
  const MoeRankResult r = run_solo(c, MoeFault::none).front();
  const MoeRankResult back = unpack_moe_result(c, pack_moe_result(r), r.phases);
  CHECK(back.y == r.y);
  CHECK(back.dw_up == r.dw_up);
  CHECK(back.tokens_per_expert == r.tokens_per_expert);
  REQUIRE(back.phases.size() == r.phases.size());
  CHECK(back.phases.back().end_ns == r.phases.back().end_ns);
}

TEST_CASE("check_moe_numerics: PASS for the layer, FAIL without the combine weights") {
  const MoeLayerConfig c = small_layer();
  const auto tensors = assemble_moe_tensors(c, 3, run_solo(c, MoeFault::none));
  const NumericsReport good = check_moe_numerics(c, tensors);
  CHECK(good.pass);
  // y, dx, dw_router, dw_up, dw_down and the routing counts (per expert, dropped).
  CHECK(good.tensors.size() == 7);
  for (const auto& t : good.tensors) CHECK(t.max_rel_error < 1e-12);
  const NumericsReport bad =
      check_moe_numerics(c, assemble_moe_tensors(c, 3, run_solo(c, MoeFault::combine_weights)));
  CHECK_FALSE(bad.pass);
  CHECK_FALSE(bad.tensors.front().pass);  // y
}

TEST_CASE("the router gradient is the sum of the ranks' parts") {
  // Two ranks' results put together (dw_router added, the other tensors placed): a rank whose
  // part is all zeros leaves the other's unchanged; two equal parts double it.
  MoeLayerConfig c = small_layer();
  const MoeRankResult r = run_solo(c, MoeFault::none).front();
  c.ep = 2;
  MoeRankResult half0 = r, half1 = r;
  const std::size_t rows = r.y.size() / 2;
  half0.y.resize(rows);
  half0.dx.resize(rows);
  half1.y.assign(r.y.begin() + static_cast<std::ptrdiff_t>(rows), r.y.end());
  half1.dx.assign(r.dx.begin() + static_cast<std::ptrdiff_t>(rows), r.dx.end());
  const std::size_t w = r.dw_up.size() / 2, d = r.dw_down.size() / 2;
  half0.dw_up.resize(w);
  half1.dw_up.assign(r.dw_up.begin() + static_cast<std::ptrdiff_t>(w), r.dw_up.end());
  half0.dw_down.resize(d);
  half1.dw_down.assign(r.dw_down.begin() + static_cast<std::ptrdiff_t>(d), r.dw_down.end());
  std::fill(half1.dw_router.begin(), half1.dw_router.end(), 0.0);
  auto t = assemble_moe_tensors(c, 3, {half0, half1});
  CHECK(find_tensor(t, "dw_router").values == r.dw_router);
  CHECK(find_tensor(t, "y").values == r.y);
  half1.dw_router = r.dw_router;
  t = assemble_moe_tensors(c, 3, {half0, half1});
  CHECK(find_tensor(t, "dw_router").values[0] == 2 * r.dw_router[0]);
}
