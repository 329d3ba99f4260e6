#pragma once
// The data-parallel gradient buckets of one model chunk (ARCHITECTURE.md §4.4), as Megatron's
// distributed data parallel forms them: in backward order, bucket j of nb holds the layers
// [ceil(j L / nb), ceil((j+1) L / nb)) of the chunk's L layers; the output head's parameters go
// with the first bucket, the embedding's with the last. A bucket is ready once the weight
// gradients of all its layers are done; its reduction moves the parameters' main grads (fp32, or
// bf16 with Megatron-Core's grad_reduce_in_fp32 off).
#include <cstdint>
#include <vector>

namespace meshsim {

struct ReadyBucket {
  std::int64_t bytes = 0;  // the parameters' gradients: grad_bytes per parameter
  int index = 0;           // in backward order
};

class GradientBuckets {
 public:
  // nb = min(max_buckets, max(L, 1)), at least 1; last_bucket_extra: the embedding's parameters
  // on the first stage (else 0); grad_bytes: bytes per gradient element (4 fp32, 2 bf16).
  GradientBuckets(int layers, int max_buckets, std::int64_t last_bucket_extra, int grad_bytes);

  void add(std::int64_t params) { pending_ += params; }
  void layer_done() { ++done_; }
  // The buckets whose layers are all done and that have not been taken yet, in order.
  std::vector<ReadyBucket> take_ready();

  int count() const { return count_; }
  // Backward positions [begin(j), begin(j + 1)) of the chunk's layers make bucket j.
  int begin(int j) const { return (layers_ * j + count_ - 1) / count_; }
  // The bucket of the layer at backward position i (0 = the chunk's last layer).
  int bucket_of(int i) const;

 private:
  int count_ = 1, layers_ = 0, done_ = 0, next_ = 0;
  std::int64_t pending_ = 0, last_extra_ = 0;
  int grad_bytes_ = 4;
};

}  // namespace meshsim
