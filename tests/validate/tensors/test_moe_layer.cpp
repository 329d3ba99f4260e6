#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/error.hpp"
#include "validate/tensors/moe_layer.hpp"

using namespace meshsim;

namespace {

std::string config_error(const MoeLayerConfig& c) {
  try {
    check_moe_layer_config(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("check_moe_layer_config names the field that does not divide") {
  MoeLayerConfig c;
  CHECK(config_error(c).empty());
  c.ep = 3;  // 8 experts over 3 EP ranks
  CHECK(config_error(c).find("`experts`") != std::string::npos);
  c.ep = 2;
  c.tokens = 255;  // over 2 ranks
  CHECK(config_error(c).find("`tokens`") != std::string::npos);
  c.tokens = 264;  // divides over 2 x 3 ranks
  c.etp = 3;       // f = 128 over 3
  CHECK(config_error(c).find("`ffn_hidden`") != std::string::npos);
  c.etp = 1;
  c.top_k = 9;  // more than the 8 experts
  CHECK(config_error(c).find("`top_k`") != std::string::npos);
  c.top_k = 2;
  c.dtype = DType::bf16;
  CHECK(config_error(c).find("`dtype`") != std::string::npos);
}

TEST_CASE("routing_bias is the log of each expert's share of the routing") {
  MoeLayerConfig c;
  for (const double b : routing_bias(c)) CHECK(b == doctest::Approx(std::log(1.0 / 8)));
  // zipf:1 over 2 experts: shares 1 and 1/2, normalised 2/3 and 1/3.
  c.experts = 2;
  c.routing = parse_routing("zipf:1");
  const std::vector<double> b = routing_bias(c);
  CHECK(b[0] == doctest::Approx(std::log(2.0 / 3)));
  CHECK(b[1] == doctest::Approx(std::log(1.0 / 3)));
}

TEST_CASE("moe_shard_indices: token rows, expert shards, ETP slices of f") {
  // E = 2, ep = 1, etp = 2, h = 1, f = 2, T = 4. Rank 1 (etp index 1) holds tokens 2, 3; the
  // gate row 1 and up row 2 + 1 = 3 of each expert's W_up [2f = 4, 1] (expert e at 4e): 1, 3, 5,
  // 7; column 1 of each W_down [1, 2]: 1, 3.
  MoeLayerConfig c;
  c.experts = 2;
  c.etp = 2;
  c.hidden = 1;
  c.ffn = 2;
  c.tokens = 4;
  CHECK(moe_shard_indices(c, "x", 1) == std::vector<std::int64_t>{2, 3});
  CHECK(moe_shard_indices(c, "w_up", 1) == std::vector<std::int64_t>{1, 3, 5, 7});
  CHECK(moe_shard_indices(c, "w_down", 1) == std::vector<std::int64_t>{1, 3});
  CHECK(moe_shard_indices(c, "w_router", 1) == std::vector<std::int64_t>{0, 1});
  // ep = 2, etp = 1: rank 1 holds expert 1 whole (W_up elements 4..7, W_down 2, 3).
  c.ep = 2;
  c.etp = 1;
  CHECK(moe_shard_indices(c, "w_up", 1) == std::vector<std::int64_t>{4, 5, 6, 7});
  CHECK(moe_shard_indices(c, "w_down", 1) == std::vector<std::int64_t>{2, 3});
  CHECK(moe_tensor_shape(c, "w_up") == std::vector<std::int64_t>{2, 4, 1});
}
