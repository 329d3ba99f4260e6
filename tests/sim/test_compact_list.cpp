#include <doctest/doctest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "sim/compact_list.hpp"

using namespace meshsim;

namespace {
struct Range {
  std::int64_t begin, end;
  bool operator==(const Range&) const = default;
};
}  // namespace

TEST_CASE("compact list: one pointer in its owner, nothing allocated while empty") {
  static_assert(sizeof(CompactList<std::int32_t>) == sizeof(void*));
  const CompactList<std::int32_t> none;
  CHECK(none.empty());
  CHECK(none.size() == 0);
  CHECK(none.begin() == none.end());
  CHECK(none.data() == nullptr);
}

TEST_CASE("compact list: reads, compares and converts like the vector it stands for") {
  const std::vector<std::int32_t> v = {3, -1, 7};
  const CompactList<std::int32_t> a = v, b = {3, -1, 7};
  CHECK(a == b);
  CHECK(a.size() == 3);
  CHECK(a[1] == -1);
  CHECK(a.front() == 3);
  CHECK(a.back() == 7);
  CHECK(std::vector<std::int32_t>(a) == v);
  CHECK(a.to_vector() == v);
  const std::span<const std::int32_t> s = a;
  CHECK(s.size() == 3);
  CHECK(s[2] == 7);
  CHECK_FALSE(a == CompactList<std::int32_t>{3, -1});
  CHECK_FALSE(a == CompactList<std::int32_t>{});
  CHECK(CompactList<std::int32_t>{} == CompactList<std::int32_t>());
}

TEST_CASE("compact list: copies are deep, moves take the block, push_back grows") {
  CompactList<Range> a;
  for (std::int64_t i = 0; i < 100; ++i) a.push_back(Range{i, i + 1});
  REQUIRE(a.size() == 100);
  CHECK(a[99] == Range{99, 100});
  a.push_back(a[0]);  // an entry of its own block
  CHECK(a.back() == Range{0, 1});
  CompactList<Range> copy = a;
  copy[0] = Range{-5, -4};
  CHECK(a[0] == Range{0, 1});
  CompactList<Range> moved = std::move(copy);
  CHECK(moved.size() == 101);
  CHECK(moved[0] == Range{-5, -4});
  copy = moved;  // assigning to a moved-from list
  CHECK(copy == moved);
  const CompactList<Range>& same = copy;
  copy = same;  // self-assignment keeps it
  CHECK(copy.size() == 101);
  copy = {};
  CHECK(copy.empty());
  moved.clear();
  CHECK(moved.empty());
}
