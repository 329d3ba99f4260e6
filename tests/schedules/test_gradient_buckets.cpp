#include <doctest/doctest.h>

#include <vector>

#include "schedules/gradient_buckets.hpp"

using namespace meshsim;

TEST_CASE("GradientBuckets: 10 layers in 4 buckets close after ceil(j x 10 / 4) layers") {
  // Bucket j closes once ceil((j+1) x 10 / 4) = 3, 5, 8, 10 layers are done (backward order).
  GradientBuckets b(10, 4, 7, 4);
  CHECK(b.count() == 4);
  b.add(100);  // the head's parameters go with the first bucket
  std::vector<int> closed_after;
  std::vector<ReadyBucket> all;
  for (int layer = 1; layer <= 10; ++layer) {
    b.layer_done();
    b.add(1000);
    for (const ReadyBucket& r : b.take_ready()) {
      closed_after.push_back(layer);
      all.push_back(r);
    }
  }
  CHECK(closed_after == std::vector<int>{3, 5, 8, 10});
  REQUIRE(all.size() == 4);
  // fp32 grads, 4 bytes per parameter: head + 3 layers; 2 layers; 3 layers; 2 layers + embedding.
  CHECK(all[0].bytes == 4 * (100 + 3000));
  CHECK(all[1].bytes == 4 * 2000);
  CHECK(all[2].bytes == 4 * 3000);
  CHECK(all[3].bytes == 4 * (2000 + 7));
  CHECK(all[3].index == 3);
  CHECK(b.take_ready().empty());
}

TEST_CASE("GradientBuckets: fewer layers than buckets, and a chunk with no layers") {
  GradientBuckets two(2, 4, 0, 4);
  CHECK(two.count() == 2);  // one bucket per layer
  GradientBuckets none(0, 4, 5, 4);
  CHECK(none.count() == 1);
  none.add(9);  // e.g. only the head
  const auto ready = none.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].bytes == 4 * (9 + 5));
}

TEST_CASE("GradientBuckets: bf16 gradients (grad_reduce_in_fp32 off) move 2 bytes per parameter") {
  GradientBuckets b(1, 1, 0, 2);
  b.add(1000);
  b.layer_done();
  const auto ready = b.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].bytes == 2 * 1000);
}
