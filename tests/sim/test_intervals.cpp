#include <doctest/doctest.h>

#include "sim/intervals.hpp"

using namespace meshsim;

TEST_CASE("intervals: union, length and difference") {
  // [0,10) and [5,20) overlap, [20,25) touches, [30,30) is empty, [40,50) stands alone.
  const auto m = merge_intervals({{40, 50}, {5, 20}, {0, 10}, {30, 30}, {20, 25}});
  CHECK(m == std::vector<Interval>{{0, 25}, {40, 50}});
  CHECK(total_length(m) == 35);  // 25 + 10
  // {[0,25), [40,50)} minus {[3,5), [20,45)}: [0,3) + [5,20) + [45,50) = 3 + 15 + 5 = 23.
  const auto d = subtract_intervals(m, {{3, 5}, {20, 45}});
  CHECK(d == std::vector<Interval>{{0, 3}, {5, 20}, {45, 50}});
  CHECK(total_length(d) == 23);
  CHECK(subtract_intervals(m, {}) == m);
  CHECK(subtract_intervals({}, m).empty());
}
