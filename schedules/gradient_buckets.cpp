#include "schedules/gradient_buckets.hpp"

#include <algorithm>

namespace meshsim {

GradientBuckets::GradientBuckets(int layers, int max_buckets, std::int64_t last_bucket_extra,
                                 int grad_bytes)
    : count_(std::max(1, std::min(max_buckets, std::max(layers, 1)))),
      layers_(layers),
      last_extra_(last_bucket_extra),
      grad_bytes_(grad_bytes) {}

std::vector<ReadyBucket> GradientBuckets::take_ready() {
  std::vector<ReadyBucket> ready;
  // Bucket j is complete once ceil((j+1) L / nb) layers are done.
  while (next_ < count_ && done_ >= begin(next_ + 1)) {
    if (next_ + 1 == count_) pending_ += last_extra_;
    ready.push_back(ReadyBucket{pending_ * grad_bytes_, next_++});
    pending_ = 0;
  }
  return ready;
}

int GradientBuckets::bucket_of(int i) const {
  int j = 0;
  while (j + 1 < count_ && i >= begin(j + 1)) ++j;
  return j;
}

}  // namespace meshsim
