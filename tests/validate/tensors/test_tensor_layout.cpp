#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "sim/error.hpp"
#include "validate/tensors/tensor_layout.hpp"

using namespace meshsim;

namespace {

std::vector<std::pair<std::int64_t, std::int64_t>> visit_all(const ShardSpec& s,
                                                             const std::vector<std::int64_t>& g) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for_each_element(s, g, [&](std::int64_t l, std::int64_t gl) { out.emplace_back(l, gl); });
  return out;
}

}  // namespace

TEST_CASE("for_each_element maps local row-major indices to global ones") {
  // Global [4, 3]; the shard holds rows 1 and 3 (two ranges) and columns 0..1.
  const ShardSpec s{"t", {{{1, 2}, {3, 4}}, {{0, 2}}}};
  CHECK(shard_elements(s) == 4);
  const auto v = visit_all(s, {4, 3});
  // (row 1, col 0) = 3, (1, 1) = 4, (3, 0) = 9, (3, 1) = 10
  CHECK(v == std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 3}, {1, 4}, {2, 9}, {3, 10}});
}

TEST_CASE("a whole shard visits every element in order; an empty axis visits none") {
  const auto v = visit_all(ShardSpec{"t", whole({2, 2, 2})}, {2, 2, 2});
  REQUIRE(v.size() == 8);
  for (std::size_t i = 0; i < v.size(); ++i) {
    CHECK(v[i].first == static_cast<std::int64_t>(i));
    CHECK(v[i].second == static_cast<std::int64_t>(i));
  }
  CHECK(visit_all(ShardSpec{"t", {{{0, 0}}, {{0, 2}}}}, {1, 2}).empty());
}

TEST_CASE("layout lookups and checks") {
  TensorLayout layout;
  layout.add_tensor({"x", {8, 2}, true});
  layout.add_shard(0, "x", ShardSpec{"x", {{{0, 4}}, {{0, 2}}}});
  layout.add_shard(1, "x_local", ShardSpec{"x", {{{4, 8}}, {{0, 2}}}});
  CHECK(layout.tensor("x")->input);
  CHECK(layout.tensor("y") == nullptr);
  CHECK(layout.shard(1, "x_local")->axes[0][0] == IndexRange{4, 8});
  CHECK(layout.shard(1, "x") == nullptr);
  CHECK(layout.holders("x") == std::vector<std::pair<int, std::string>>{{0, "x"}, {1, "x_local"}});
  CHECK_THROWS_AS(layout.add_shard(2, "x", ShardSpec{"x", {{{0, 9}}, {{0, 2}}}}), InvariantError);
  CHECK_THROWS_AS(layout.add_shard(2, "x", ShardSpec{"x", {{{0, 1}}}}), InvariantError);
  CHECK_THROWS_AS(layout.add_shard(2, "x", ShardSpec{"nope", {}}), InvariantError);
  CHECK_THROWS_AS(layout.add_tensor({"x", {1}}), InvariantError);
}
