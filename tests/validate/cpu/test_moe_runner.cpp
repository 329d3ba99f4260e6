#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "kernels/reference/moe_layer.hpp"
#include "validate/cpu/moe_layer_state.hpp"
#include "validate/cpu/moe_runner.hpp"

using namespace meshsim;

namespace {

MoeLayerConfig small_layer() {
  MoeLayerConfig c;
  c.experts = 4;
  c.top_k = 2;
  c.tokens = 16;
  c.hidden = 8;
  c.ffn = 6;
  return c;
}

// max |got - want| / max |want|
double rel_error(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return err / scale;
}

std::vector<double> input(const MoeLayerConfig& c, const char* name, std::int64_t n) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(moe_input_value(c, 1, name, i));
  return v;
}

kernels::reference::MoeLayerTensors reference(const MoeLayerConfig& c) {
  kernels::reference::MoeLayerDims d{c.tokens, c.hidden,           c.ffn,           c.experts,
                                     c.top_k,  expert_capacity(c), c.local_tokens()};
  const std::int64_t h = c.hidden, f = c.ffn, e = c.experts;
  return kernels::reference::moe_layer(d, input(c, "x", c.tokens * h), input(c, "w_router", e * h),
                                       routing_bias(c), input(c, "w_up", e * 2 * f * h),
                                       input(c, "w_down", e * h * f), input(c, "dy", c.tokens * h));
}

MoeRankResult run(const MoeLayerConfig& c, MoeFault fault = MoeFault::none) {
  const auto comm = make_solo_moe_comm();
  return run_moe_layer(c, 1, 0, *comm, fault, std::chrono::steady_clock::now());
}

}  // namespace

TEST_CASE("one rank's MoE layer equals the float64 reference (fp64 to 1e-12, fp32 to 1e-5)") {
  // ep = etp = 1: every expert local, the collectives copies; the runner's GEMMs (OpenBLAS) and
  // kernels against the token-by-token reference.
  for (const DType dtype : {DType::fp64, DType::fp32}) {
    MoeLayerConfig c = small_layer();
    c.dtype = dtype;
    const double tol = dtype == DType::fp64 ? 1e-12 : 1e-5;
    const MoeRankResult got = run(c);
    const auto want = reference(c);
    CHECK(rel_error(got.y, want.y) < tol);
    CHECK(rel_error(got.dx, want.dx) < tol);
    CHECK(rel_error(got.dw_router, want.dw_router) < tol);
    CHECK(rel_error(got.dw_up, want.dw_up) < tol);
    CHECK(rel_error(got.dw_down, want.dw_down) < tol);
    CHECK(got.tokens_per_expert == want.tokens_per_expert);
  }
}

TEST_CASE("dropping the router weights at the combine changes y (the check can fail)") {
  // The k = 2 weights sum to 1 per token; without them y is the plain sum of both experts'
  // outputs, far from the weighted one.
  const MoeLayerConfig c = small_layer();
  CHECK(rel_error(run(c, MoeFault::combine_weights).y, reference(c).y) > 0.1);
}

TEST_CASE("a skewed routing sends more copies to the first experts") {
  // zipf:2 over 4 experts: shares 1, 1/4, 1/9, 1/16 of 1.42; the router bias log(share) makes
  // expert 0 the most chosen by far.
  MoeLayerConfig c = small_layer();
  c.tokens = 64;
  c.routing = parse_routing("zipf:2");
  const MoeRankResult got = run(c);
  CHECK(got.tokens_per_expert[0] > got.tokens_per_expert[3] + 16);
  CHECK(got.tokens_per_expert == reference(c).tokens_per_expert);
}

TEST_CASE("expert_major_rows orders the gathered chunks by expert, then member, then source") {
  // etp 2, ep 2, 2 local experts; counts[(i·ep + p)·el + j] = {1,2, 0,1, 3,0, 1,1}: chunks start
  // at rows 0, 1, 3, 3, 4, 7, 7, 8. Expert 0: rows 0 (i0 p0), 4 5 6 (i1 p0), 7 (i1 p1);
  // expert 1: 1 2 (i0 p0), 3 (i0 p1), 8 (i1 p1).
  const std::vector<std::int64_t> counts{1, 2, 0, 1, 3, 0, 1, 1};
  std::vector<std::int64_t> per_expert;
  const auto rows = moe_detail::expert_major_rows(counts, 2, 2, 2, per_expert);
  CHECK(rows == std::vector<std::int64_t>{0, 4, 5, 6, 7, 1, 2, 3, 8});
  CHECK(per_expert == std::vector<std::int64_t>{5, 4});
}

TEST_CASE("a capacity factor drops copies as the reference does") {
  // 64 tokens x top-2 over 4 experts under zipf:2: capacity ceil(0.5 x 128 / 4) = 16 per expert;
  // expert 0 is routed far more than 16 copies, so copies are dropped, and the layer (y, every
  // gradient, the counts) still equals the reference, which drops by its own sort.
  MoeLayerConfig c = small_layer();
  c.tokens = 64;
  c.routing = parse_routing("zipf:2");
  c.capacity_factor = 0.5;
  CHECK(expert_capacity(c) == 16);
  const MoeRankResult got = run(c);
  const auto want = reference(c);
  CHECK(got.dropped > 0);
  CHECK(got.dropped == want.dropped);
  CHECK(got.tokens_per_expert == want.tokens_per_expert);
  CHECK(got.tokens_per_expert[0] == 16);
  CHECK(rel_error(got.y, want.y) < 1e-12);
  CHECK(rel_error(got.dx, want.dx) < 1e-12);
  CHECK(rel_error(got.dw_router, want.dw_router) < 1e-12);
  CHECK(rel_error(got.dw_up, want.dw_up) < 1e-12);
}
