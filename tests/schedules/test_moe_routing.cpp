#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>

#include "schedules/moe_plan.hpp"
#include "sim/error.hpp"

using namespace meshsim;

namespace {
MoeBlock block(int experts, int top_k) {
  MoeBlock b;
  b.experts = experts;
  b.top_k = top_k;
  b.expert_ffn = 16;
  return b;
}
}  // namespace

TEST_CASE("moe routing: uniform spreads T·k·ep copies evenly") {
  MoePlan p;
  p.ep = 4;
  // 100 tokens per rank, top 2, 4 EP ranks: 800 copies over 8 experts = 100 each
  const ExpertLoad l = expert_load(block(8, 2), p, 100);
  for (const double n : l.tokens) CHECK(n == doctest::Approx(100.0));
  CHECK(l.per_rank == std::vector<double>{200, 200, 200, 200});
  CHECK(l.imbalance == doctest::Approx(1.0));
  CHECK(l.dropped == 0);
}

TEST_CASE("moe routing: zipf skew and the capacity factor") {
  MoePlan p;
  p.ep = 2;
  p.routing = parse_routing("zipf:1");
  // shares 1/(j+1) / H_4 with H_4 = 25/12: expert 0 gets 12/25 of 400 copies = 192
  const ExpertLoad l = expert_load(block(4, 2), p, 100);
  CHECK(l.tokens[0] == doctest::Approx(192.0));
  CHECK(l.tokens[3] == doctest::Approx(48.0));
  // rank 0 holds experts 0, 1: (1 + 1/2) / (25/12) x 400 = 288 of a mean 200
  CHECK(l.imbalance == doctest::Approx(1.44));
  // capacity 1.0: each expert takes at most 400 / 4 = 100; expert 0 drops 92, expert 1 drops 0
  p.capacity_factor = 1.0;
  const ExpertLoad c = expert_load(block(4, 2), p, 100);
  CHECK(c.tokens[0] == doctest::Approx(100.0));
  CHECK(c.dropped == doctest::Approx(92.0));
}

TEST_CASE("moe routing: a file of tokens per expert, and bad input") {
  const auto path = std::filesystem::temp_directory_path() /
                    ("meshsim_routing_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"tokens_per_expert": [3, 1, 0, 0]})";
  MoePlan p;
  p.routing = parse_routing(path.string());
  const ExpertLoad l = expert_load(block(4, 1), p, 40);  // 40 copies: 30, 10, 0, 0
  CHECK(l.tokens == std::vector<double>{30, 10, 0, 0});
  CHECK_THROWS_AS(expert_load(block(8, 1), p, 40), InputError);  // 4 entries for 8 experts
  std::filesystem::remove(path);
  CHECK_THROWS_WITH_AS(parse_routing("zipf:x"),
                       "`routing`: expected zipf:S with 0 <= S <= 16, got 'zipf:x'", InputError);
  CHECK_THROWS_AS(parse_routing("nope.json"), InputError);
}
