#include <doctest/doctest.h>

#include "sim/comm_volume.hpp"
#include "sim/step_metrics.hpp"
#include "tiny_programs.hpp"

using namespace meshsim;
using meshsim::testing::exchange;
using meshsim::testing::vector_kernel;

namespace {
std::size_t dim_index(std::string_view dim) {
  for (std::size_t i = 0; i < std::size(kCommDims); ++i) {
    if (kCommDims[i] == dim) return i;
  }
  return 0;
}
}  // namespace

TEST_CASE("comm volume: bytes sent per rank and dimension") {
  // A 4 (dp) x 2 (pp) mesh; the dp ranks of pp stage 0 form an "ep" group.
  ProgramBuilder b(Mesh({{"dp", 4}, {"pp", 2}}, 8), false, "volume");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("comm");
  const GroupId ep = b.group("ep", {0, 1, 2, 3});
  const GroupId edp = b.group("edp", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    b.add(r, compute, "k", {}, vector_kernel());
    // all-to-all of a 1000-byte buffer: (4 - 1) / 4 of it leaves each rank
    b.add(r, comm, "a2a", {}, CollectiveCall{CollectiveKind::all_to_all, ep, 1000, DType::bf16});
    // ring all-reduce of 800 bytes: 2 (4 - 1) / 4 x 800 = 1200 sent; "edp" counts as dp
    b.add(r, comm, "ar", {}, CollectiveCall{CollectiveKind::all_reduce, edp, 800, DType::fp32});
  }
  b.add(0, comm, "send", {}, exchange(4, 4, 64));  // a pp transfer of 64 bytes from rank 0
  b.add(4, comm, "recv", {}, exchange(0, 0, 64));
  const Program p = std::move(b).finish();
  const std::vector<double> v = comm_bytes_per_rank(p);
  REQUIRE(v.size() == std::size(kCommDims));
  // 5 ranks run ops: 4 x 750 / 5 on ep, 4 x 1200 / 5 on dp, (64 + 64) / 5 on pp.
  CHECK(v[dim_index("ep")] == doctest::Approx(4 * 750.0 / 5));
  CHECK(v[dim_index("dp")] == doctest::Approx(4 * 1200.0 / 5));
  CHECK(v[dim_index("pp")] == doctest::Approx(128.0 / 5));
  CHECK(v[dim_index("tp")] == 0);
}

TEST_CASE("comm volume: a folded group counts as its timed_as group") {
  ProgramBuilder b(Mesh({{"dp", 4}}, 8), false, "folded");
  const StreamId comm = b.stream("comm");
  const GroupId ep = b.group("ep", {0}, {0, 1, 2, 3});
  b.add(0, comm, "a2a", {}, CollectiveCall{CollectiveKind::all_to_all, ep, 1000, DType::bf16});
  const Program p = std::move(b).finish();
  CHECK(comm_bytes_per_rank(p)[dim_index("ep")] == doctest::Approx(750.0));
}
