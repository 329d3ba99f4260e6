#include <doctest/doctest.h>

#include "sim/mesh.hpp"

using namespace meshsim;

TEST_CASE("megatron order: tp fastest, then cp, dp, pp outermost") {
  const Mesh m = make_megatron_mesh(2, 4, 2, 3, 8);
  CHECK(m.world_size() == 48);  // 2 * 4 * 2 * 3
  // rank = tp + 2 * (cp + 4 * (dp + 2 * pp)); rank 13 = 1 + 2 * (2 + 4 * 1) -> tp 1, cp 2, dp 1
  CHECK(m.coords(13) == std::vector<int>{1, 2, 1, 0});
  CHECK(m.rank_of({1, 2, 1, 0}) == 13);
  CHECK(m.describe_rank(13) == "tp=1 cp=2 dp=1 pp=0");
  for (int r = 0; r < m.world_size(); ++r) CHECK(m.rank_of(m.coords(r)) == r);
}

TEST_CASE("groups are the ranks of one dimension slice") {
  const Mesh m = make_megatron_mesh(2, 4, 1, 1, 8);
  // CP group of rank 3 (tp 1, cp 1): ranks tp=1, cp=0..3 -> 1, 3, 5, 7
  CHECK(m.group_of("cp", 3) == std::vector<int>{1, 3, 5, 7});
  CHECK(m.group_of("tp", 3) == std::vector<int>{2, 3});
  CHECK(m.group_of("dp", 3) == std::vector<int>{3});  // size-1 dimension
  CHECK(m.group_of("ep", 3) == std::vector<int>{3});  // absent dimension
  CHECK(m.size_of("cp") == 4);
  CHECK(m.size_of("ep") == 1);
}

TEST_CASE("placement on nodes") {
  const Mesh m({{"cp", 16}}, 8);
  CHECK(m.num_nodes() == 2);
  CHECK(m.node_of(7) == 0);
  CHECK(m.node_of(8) == 1);
  CHECK(Mesh({{"cp", 3}}, 8).num_nodes() == 1);
  CHECK(Mesh().world_size() == 1);
}
