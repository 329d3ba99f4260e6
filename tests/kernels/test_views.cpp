#include <doctest/doctest.h>

#include <vector>

#include "kernels/views.hpp"

using namespace meshsim::kernels;

TEST_CASE("locate_rows: a zigzag rank's layout (chunk r, then chunk 2N-1-r)") {
  // N = 4, c = 8, h = 4: rank 1 holds positions [4, 8) in rows 0-3 and [24, 28) in rows 4-7.
  const std::vector<PositionRange> layout{{4, 8}, {24, 28}};
  const std::vector<PositionRange> all{{4, 8}, {24, 28}};
  CHECK(locate_rows(all, layout) == std::vector<RowSpan>{{0, 4, 4}, {4, 24, 4}});
  const std::vector<PositionRange> second{{24, 28}};
  CHECK(locate_rows(second, layout) == std::vector<RowSpan>{{4, 24, 4}});
  const std::vector<PositionRange> inner{{5, 7}, {25, 26}};
  CHECK(locate_rows(inner, layout) == std::vector<RowSpan>{{1, 5, 2}, {5, 25, 1}});
  CHECK(total_rows(locate_rows(inner, layout)) == 3);
}

TEST_CASE("locate_rows merges pieces that continue in rows and positions, splits the others") {
  const std::vector<PositionRange> layout{{0, 4}, {4, 8}};  // contiguous positions in rows 0-7
  const std::vector<PositionRange> wanted{{2, 6}};
  CHECK(locate_rows(wanted, layout) == std::vector<RowSpan>{{2, 2, 4}});
  const std::vector<PositionRange> reversed{{4, 8}, {0, 4}};  // positions 4-7 in rows 0-3
  const std::vector<PositionRange> across{{2, 6}};
  CHECK(locate_rows(across, reversed) == std::vector<RowSpan>{{6, 2, 2}, {0, 4, 2}});
  CHECK(all_rows(reversed) == std::vector<RowSpan>{{0, 4, 4}, {4, 0, 4}});
}

TEST_CASE("locate_rows rejects positions the buffer does not hold") {
  const std::vector<PositionRange> layout{{0, 4}};
  const std::vector<PositionRange> wanted{{3, 5}};
  CHECK_THROWS_AS(locate_rows(wanted, layout), KernelError);
  const std::vector<PositionRange> empty{{2, 2}};
  CHECK(locate_rows(empty, layout).empty());
}

TEST_CASE("heads, kv and lse views: contiguous strides and the V half of a packed buffer") {
  std::vector<float> buf(2 * 2 * 3 * 4 * 5);
  const HeadsView q = heads_view(buf.data(), ScalarType::fp32, 2, 3, 4, 5);
  CHECK(q.batch_stride == 60);  // tokens * heads * head_dim
  CHECK(q.token_stride == 20);
  CHECK(q.head_stride == 5);
  const KvViews kv = kv_views(buf.data(), ScalarType::fp32, 2, 3, 4, 5);
  CHECK(kv.k.data == buf.data());
  CHECK(kv.v.data == buf.data() + 120);  // after batch * tokens * heads * head_dim elements of K
  const LseView lse = lse_view(buf.data(), ScalarType::fp32, 2, 4, 3);
  CHECK(lse.batch_stride == 12);
  CHECK(lse.head_stride == 3);
}

TEST_CASE("matrix and vector views: sub-views address the right elements") {
  std::vector<double> buf(6 * 5);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<double>(i);
  const MatrixView m = matrix_view(buf.data(), ScalarType::fp64, 6, 5);
  const MatrixView s = sub_matrix(m, 2, 1, 3, 2);
  CHECK(s.ld == 5);
  CHECK(*static_cast<double*>(s.data) == 11.0);  // element (2, 1) = 2 * 5 + 1
  CHECK_THROWS_AS(sub_matrix(m, 5, 0, 2, 1), KernelError);
  CHECK(as_vector(m).size == 30);
  CHECK_THROWS_AS(as_vector(s), KernelError);  // strided rows are not one vector
  const VectorView v = sub_vector(as_vector(m), 7, 3);
  CHECK(*static_cast<double*>(v.data) == 7.0);
  CHECK_THROWS_AS(sub_vector(v, 2, 2), KernelError);
}
