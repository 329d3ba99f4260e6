#pragma once
// How a rank's tensor slots map onto the unsharded ("global") tensors of a workload: the global
// tensors (name, shape, whether the executor fills them as inputs) and, per (rank, slot name),
// which global positions the slot holds. Each local axis is the concatenation of one or more ranges
// of the global axis (zigzag ring attention holds two token chunks; a replicated tensor holds the
// whole axis). The fills and the assembly of outputs (for --dump and the numerics) read it.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace meshsim {

struct IndexRange {
  std::int64_t begin = 0;  // inclusive
  std::int64_t end = 0;    // exclusive
  std::int64_t size() const { return end - begin; }
  bool operator==(const IndexRange&) const = default;
};

struct GlobalTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  bool input = false;  // filled from the seed before the run
  double scale = 1.0;  // fill values are uniform in [-scale, scale)
  // When not empty: written (--dump) as these tensors, one per index of the first axis (the
  // packed kv buffers as k and v).
  std::vector<std::string> parts = {};
};

struct ShardSpec {
  std::string tensor;                         // GlobalTensor::name
  std::vector<std::vector<IndexRange>> axes;  // per axis: the global ranges, concatenated
};

class TensorLayout {
 public:
  void add_tensor(GlobalTensor tensor);
  // Slot `slot_name` of `rank` holds these positions of a registered tensor (checked: one range
  // list per global axis, each range inside the axis).
  void add_shard(int rank, const std::string& slot_name, ShardSpec shard);

  const std::vector<GlobalTensor>& tensors() const { return tensors_; }
  const GlobalTensor* tensor(const std::string& name) const;
  const ShardSpec* shard(int rank, const std::string& slot_name) const;
  // Every (rank, slot name) that holds part of `tensor`, in rank order.
  std::vector<std::pair<int, std::string>> holders(const std::string& tensor) const;

 private:
  std::vector<GlobalTensor> tensors_;
  std::map<std::pair<int, std::string>, ShardSpec> shards_;
};

// The whole of a tensor of `shape`: one full range per axis.
std::vector<std::vector<IndexRange>> whole(const std::vector<std::int64_t>& shape);

// Elements of a shard (product of its local axis sizes).
std::int64_t shard_elements(const ShardSpec& shard);

// Calls visit(local_index, global_index) for every element of the shard, local indices in
// row-major order 0, 1, 2, ...; global indices are row-major in `global_shape`.
void for_each_element(const ShardSpec& shard, const std::vector<std::int64_t>& global_shape,
                      const std::function<void(std::int64_t, std::int64_t)>& visit);

}  // namespace meshsim
