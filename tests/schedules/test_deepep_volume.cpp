#include <doctest/doctest.h>

#include "schedules/deepep_volume.hpp"
#include "sim/error.hpp"

using namespace meshsim;

namespace {

MoeBlock block(int experts, int top_k, int groups = 0, int group_topk = 0) {
  MoeBlock b;
  b.experts = experts;
  b.top_k = top_k;
  b.expert_ffn = 1;
  b.router_groups = groups;
  b.router_group_topk = group_topk;
  return b;
}

}  // namespace

TEST_CASE("deepep volume: shares of ranks and nodes under uniform top-k routing") {
  // 8 experts, top 2, ep 8 over 2 nodes. A rank holds one expert: reached with probability
  // k / E = 2/8. A node holds 4: missed when both draws fall among the other 4,
  // C(4, 2) / C(8, 2) = 6/28, reached with 22/28.
  const DeepEpShares s = deepep_shares(block(8, 2), 8, 2);
  CHECK(s.rank == doctest::Approx(0.25).epsilon(1e-12));
  CHECK(s.node == doctest::Approx(22.0 / 28).epsilon(1e-12));
  // One node: the node share is 1 (every token has its experts there).
  CHECK(deepep_shares(block(8, 2), 8, 1).node == doctest::Approx(1.0).epsilon(1e-12));
}

TEST_CASE("deepep volume: DeepSeek-V3's node-limited routing (8 groups, top 4, 256 experts)") {
  const MoeBlock v3 = block(256, 8, 8, 4);
  // ep 64 over 8 nodes, one group per node. A rank's 4 experts lie in one group: its group is
  // chosen with 4/8, then the 8 draws from the chosen 128 experts miss its 4 with
  // C(124, 8) / C(128, 8): share 0.5 (1 - C(124,8)/C(128,8)) = 0.114990157... (Python's
  // math.comb). A node (one group of 32): 0.5 (1 - C(96,8)/C(128,8)) = 0.453626365...
  const DeepEpShares s = deepep_shares(v3, 64, 8);
  CHECK(s.rank == doctest::Approx(0.11499015748031494).epsilon(1e-12));
  CHECK(s.node == doctest::Approx(0.45362636555321256).epsilon(1e-12));
  // Nodes per token 8 x 0.4536 = 3.63: at most 4, as node-limited routing promises.
  CHECK(8 * s.node <= 4.0);
  // Two groups per node (4 nodes): j of the node's 2 groups among the 4 chosen with
  // C(2, j) C(6, 4 - j) / C(8, 4) = 15, 40, 15 of 70; missed with C(128 - 32 j, 8) / C(128, 8):
  // 1 - (15 + 40 C(96,8)/C(128,8) + 15 C(64,8)/C(128,8)) / 70 = 0.732052446...
  CHECK(deepep_shares(v3, 64, 4).node == doctest::Approx(0.7320524468586447).epsilon(1e-12));
  CHECK_THROWS_AS(expert_set_miss(v3, 250, 8), InputError);  // past the last expert
}

TEST_CASE("deepep volume: sets that straddle router groups") {
  // 96 experts in 4 groups of 24, top 8 within 2 groups; ep 6 gives sets of 16, the second of
  // which holds 8 experts of group 0 and 8 of group 1. Reference: an independent enumeration of
  // the C(4, 2) = 6 group pairs (each equally likely), missing the set's o experts among the 48
  // chosen with C(48 - o, 8) / C(48, 8), averaged over the 6 sets (Python's math.comb).
  const MoeBlock b = block(96, 8, 4, 2);
  CHECK(deepep_shares(b, 6, 1).rank == doctest::Approx(0.5549816915637517).epsilon(1e-12));
  CHECK(deepep_shares(b, 6, 3).node == doctest::Approx(0.781410807206233).epsilon(1e-12));
  CHECK(deepep_shares(b, 6, 2).node == doctest::Approx(0.8320339685336487).epsilon(1e-12));
  // The second set alone: groups 0 and 1 both chosen (1 of 6) miss all 16 with
  // C(32, 8) / C(48, 8); one of them (4 of 6) misses 8 with C(40, 8) / C(48, 8); neither (1 of 6)
  // always misses.
  CHECK(expert_set_miss(b, 16, 16) ==
        doctest::Approx((10518300.0 / 377348994 + 4 * 76904685.0 / 377348994 + 1) / 6)
            .epsilon(1e-12));
}
