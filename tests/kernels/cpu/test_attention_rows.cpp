#include <doctest/doctest.h>

#include <vector>

#include "kernels/cpu/attention_rows.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::cpu;
namespace rows = meshsim::kernels::cpu::detail;

TEST_CASE("expand_rows lists every row and position of the spans, in order") {
  const std::vector<RowSpan> spans{{4, 24, 2}, {0, 4, 3}};
  const rows::Rows r = rows::expand_rows(spans, 8, "query");
  CHECK(r.row == std::vector<std::int64_t>{4, 5, 0, 1, 2});
  CHECK(r.position == std::vector<std::int64_t>{24, 25, 4, 5, 6});
  CHECK_THROWS_AS(rows::expand_rows(spans, 5, "query"), KernelError);  // row 5 of 5 tokens
}

TEST_CASE("classify_tile: a causal tile is hidden, full or partial by its position extremes") {
  using rows::classify_tile;
  using rows::TileMask;
  CHECK(classify_tile(Mask::causal, {10, 20}, {0, 10}) == TileMask::full);     // every key <= 10
  CHECK(classify_tile(Mask::causal, {10, 20}, {21, 30}) == TileMask::hidden);  // every key > 20
  CHECK(classify_tile(Mask::causal, {10, 20}, {5, 15}) == TileMask::partial);
  CHECK(classify_tile(Mask::none, {10, 20}, {21, 30}) == TileMask::full);
  // zigzag ranges: the tile's extremes, not its first and last rows, decide
  const rows::Rows r = rows::expand_rows(std::vector<RowSpan>{{0, 50, 2}, {2, 3, 2}}, 4, "k");
  const rows::PositionSpan s = rows::position_span(r, 0, 4);
  CHECK(s.min == 3);
  CHECK(s.max == 51);
}

TEST_CASE("zero clears every element of a strided view and nothing else") {
  // The K half of a packed [2, 1, 3, 2, 2] buffer: 12 elements zeroed, V's 12 untouched.
  std::vector<float> buf(24, 1.0f);
  zero(kv_views(buf.data(), ScalarType::fp32, 1, 3, 2, 2).k);
  for (std::size_t i = 0; i < 24; ++i) CHECK(buf[i] == (i < 12 ? 0.0f : 1.0f));
}
