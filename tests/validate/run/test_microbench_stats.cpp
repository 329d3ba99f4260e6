#include <doctest/doctest.h>

#include "sim/error.hpp"
#include "validate/run/microbench_stats.hpp"

using namespace meshsim;

TEST_CASE("microbenchmark statistics: median, algbw and nccl-tests' busbw") {
  CHECK(median_seconds({3.0, 1.0, 2.0, 9.0, 4.0}) == 3.0);
  CHECK(median_seconds({4.0, 1.0, 2.0, 3.0}) == 2.5);  // (2 + 3) / 2
  CHECK_THROWS_AS(median_seconds({}), InvariantError);
  CHECK(algbw(1'000'000, 0.001) == doctest::Approx(1e9));  // 1 MB in 1 ms
  CHECK(algbw(100, 0.0) == 0.0);
  // 1 GB all-reduce over 8 ranks in 10 ms: algbw 100 GB/s, busbw = algbw 2 (n - 1) / n = 175 GB/s
  CHECK(busbw(CollectiveKind::all_reduce, 8, 1'000'000'000, 0.01) == doctest::Approx(175e9));
  // all-gather, reduce-scatter, all-to-all: algbw (n - 1) / n = 100 GB/s x 3 / 4
  CHECK(busbw(CollectiveKind::all_gather, 4, 1'000'000'000, 0.01) == doctest::Approx(75e9));
  CHECK(busbw(CollectiveKind::reduce_scatter, 4, 1'000'000'000, 0.01) == doctest::Approx(75e9));
  CHECK(busbw(CollectiveKind::all_to_all, 4, 1'000'000'000, 0.01) == doctest::Approx(75e9));
  CHECK(busbw(CollectiveKind::broadcast, 4, 1'000'000'000, 0.01) == doctest::Approx(100e9));
  CHECK(busbw(CollectiveKind::all_reduce, 1, 1'000'000'000, 0.01) == 0.0);  // one rank: no bus
}
