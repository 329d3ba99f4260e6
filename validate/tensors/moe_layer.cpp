#include "validate/tensors/moe_layer.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "validate/tensors/value_generator.hpp"

namespace meshsim {

namespace {

void require(bool ok, std::string_view field, const std::string& what) {
  if (!ok) throw InputError(fmt::format("`{}`: {}", field, what));
}

}  // namespace

void check_moe_layer_config(const MoeLayerConfig& c) {
  require(c.ep >= 1 && c.etp >= 1, c.ep < 1 ? "ep" : "etp", "expected at least 1");
  require(c.experts >= 1, "experts", fmt::format("expected at least 1, got {}", c.experts));
  require(c.experts % c.ep == 0, "experts",
          fmt::format("{} experts do not divide over ep {}", c.experts, c.ep));
  require(c.top_k >= 1 && c.top_k <= c.experts, "top_k",
          fmt::format("expected 1..{} (the experts), got {}", c.experts, c.top_k));
  require(c.tokens >= 1 && c.tokens % c.ranks() == 0, "tokens",
          fmt::format("{} tokens do not divide over ep x etp = {} ranks", c.tokens, c.ranks()));
  require(c.hidden >= 1, "hidden", fmt::format("expected at least 1, got {}", c.hidden));
  require(c.ffn >= 1 && c.ffn % c.etp == 0, "ffn_hidden",
          fmt::format("expert FFN size {} does not divide over etp {}", c.ffn, c.etp));
  require(c.dtype == DType::fp32 || c.dtype == DType::fp64, "dtype",
          fmt::format("expected fp32 or fp64, got {}", to_string(c.dtype)));
  // Every buffer's elements must fit an MPI count (int); the largest is the gathered tokens of
  // an ETP group, at most T·k·h.
  require(c.tokens * c.top_k * std::max(c.hidden, 2 * c.ffn) < (std::int64_t{1} << 31), "tokens",
          "tokens x top_k x max(hidden, 2 ffn) must stay below 2^31 elements");
}

std::int64_t expert_capacity(const MoeLayerConfig& c) {
  if (!(c.capacity_factor > 0)) return 0;
  return static_cast<std::int64_t>(
      std::ceil(c.capacity_factor * static_cast<double>(c.local_tokens() * c.top_k) / c.experts));
}

ExpertLoad expected_expert_load(const MoeLayerConfig& c) {
  MoeBlock block;
  block.experts = c.experts;
  block.top_k = c.top_k;
  MoePlan plan;
  plan.ep = c.ep;
  plan.routing = c.routing;
  return expert_load(block, plan, c.local_tokens());
}

std::vector<double> routing_bias(const MoeLayerConfig& c) {
  const ExpertLoad load = expected_expert_load(c);
  double total = 0;
  for (const double n : load.tokens) total += n;
  std::vector<double> bias;
  for (const double n : load.tokens) bias.push_back(n > 0 ? std::log(n / total) : -30.0);
  return bias;
}

double moe_input_value(const MoeLayerConfig& c, std::uint64_t seed, std::string_view name,
                       std::int64_t index) {
  double scale = 1.0;
  if (name == "w_router" || name == "w_up") scale = 1.0 / std::sqrt(double(c.hidden));
  if (name == "w_down") scale = 1.0 / std::sqrt(double(c.ffn));
  return ValueGenerator(seed, fmt::format("moe.{}", name), scale).stored(index, c.dtype);
}

MoeRankCoords moe_rank_coords(const MoeLayerConfig& c, int rank) {
  return {rank, rank % c.etp, rank / c.etp};
}

std::vector<std::int64_t> moe_shard_indices(const MoeLayerConfig& c, std::string_view name,
                                            int rank) {
  const MoeRankCoords at = moe_rank_coords(c, rank);
  const std::int64_t h = c.hidden, f = c.ffn, fl = c.local_ffn();
  std::vector<std::int64_t> out;
  if (name == "x" || name == "dy") {
    const std::int64_t first = rank * c.local_tokens() * h;
    for (std::int64_t i = 0; i < c.local_tokens() * h; ++i) out.push_back(first + i);
  } else if (name == "w_router") {
    for (std::int64_t i = 0; i < c.experts * h; ++i) out.push_back(i);
  } else if (name == "w_up") {
    for (int j = 0; j < c.local_experts(); ++j) {
      const std::int64_t e = at.ep_index * c.local_experts() + j;
      for (std::int64_t r = 0; r < 2 * fl; ++r) {
        const std::int64_t row = r < fl ? at.etp_index * fl + r : f + at.etp_index * fl + r - fl;
        for (std::int64_t k = 0; k < h; ++k) out.push_back((e * 2 * f + row) * h + k);
      }
    }
  } else if (name == "w_down") {
    for (int j = 0; j < c.local_experts(); ++j) {
      const std::int64_t e = at.ep_index * c.local_experts() + j;
      for (std::int64_t row = 0; row < h; ++row) {
        for (std::int64_t k = 0; k < fl; ++k) {
          out.push_back((e * h + row) * f + at.etp_index * fl + k);
        }
      }
    }
  } else {
    MESHSIM_CHECK(false, fmt::format("no MoE input called {}", name));
  }
  return out;
}

std::vector<std::int64_t> moe_tensor_shape(const MoeLayerConfig& c, std::string_view name) {
  const std::int64_t h = c.hidden, f = c.ffn, e = c.experts;
  if (name == "x" || name == "dy" || name == "y" || name == "dx") return {c.tokens, h};
  if (name == "w_router" || name == "dw_router") return {e, h};
  if (name == "router_bias" || name == "tokens_per_expert") return {e};
  if (name == "dropped") return {1};
  if (name == "w_up" || name == "dw_up") return {e, 2 * f, h};
  if (name == "w_down" || name == "dw_down") return {e, h, f};
  MESHSIM_CHECK(false, fmt::format("no MoE tensor called {}", name));
  return {};
}

}  // namespace meshsim
