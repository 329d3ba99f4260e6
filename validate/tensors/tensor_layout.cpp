#include "validate/tensors/tensor_layout.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

void TensorLayout::add_tensor(GlobalTensor tensor) {
  MESHSIM_CHECK(this->tensor(tensor.name) == nullptr,
                fmt::format("tensor layout: '{}' registered twice", tensor.name));
  tensors_.push_back(std::move(tensor));
}

void TensorLayout::add_shard(int rank, const std::string& slot_name, ShardSpec shard) {
  const GlobalTensor* t = tensor(shard.tensor);
  MESHSIM_CHECK(t != nullptr, fmt::format("tensor layout: unknown tensor '{}'", shard.tensor));
  MESHSIM_CHECK(shard.axes.size() == t->shape.size(),
                fmt::format("tensor layout: '{}' has {} axes, shard of rank {} slot '{}' gives {}",
                            t->name, t->shape.size(), rank, slot_name, shard.axes.size()));
  for (std::size_t a = 0; a < shard.axes.size(); ++a) {
    for (const IndexRange& r : shard.axes[a]) {
      MESHSIM_CHECK(0 <= r.begin && r.begin <= r.end && r.end <= t->shape[a],
                    fmt::format("tensor layout: range [{}, {}) outside axis {} of '{}'", r.begin,
                                r.end, a, t->name));
    }
  }
  const bool inserted = shards_.emplace(std::pair{rank, slot_name}, std::move(shard)).second;
  MESHSIM_CHECK(inserted,
                fmt::format("tensor layout: rank {} slot '{}' mapped twice", rank, slot_name));
}

const GlobalTensor* TensorLayout::tensor(const std::string& name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const ShardSpec* TensorLayout::shard(int rank, const std::string& slot_name) const {
  const auto it = shards_.find({rank, slot_name});
  return it == shards_.end() ? nullptr : &it->second;
}

std::vector<std::pair<int, std::string>> TensorLayout::holders(const std::string& tensor) const {
  std::vector<std::pair<int, std::string>> out;
  for (const auto& [key, shard] : shards_) {
    if (shard.tensor == tensor) out.push_back(key);
  }
  return out;
}

std::vector<std::vector<IndexRange>> whole(const std::vector<std::int64_t>& shape) {
  std::vector<std::vector<IndexRange>> axes;
  axes.reserve(shape.size());
  for (std::int64_t n : shape) axes.push_back({IndexRange{0, n}});
  return axes;
}

std::int64_t shard_elements(const ShardSpec& shard) {
  std::int64_t n = 1;
  for (const auto& axis : shard.axes) {
    std::int64_t size = 0;
    for (const auto& r : axis) size += r.size();
    n *= size;
  }
  return n;
}

void for_each_element(const ShardSpec& shard, const std::vector<std::int64_t>& global_shape,
                      const std::function<void(std::int64_t, std::int64_t)>& visit) {
  const std::size_t rank = shard.axes.size();
  MESHSIM_CHECK(rank == global_shape.size(), "for_each_element: shard and shape differ in rank");
  // Per axis: the global index of every local index, and the global stride.
  std::vector<std::vector<std::int64_t>> to_global(rank);
  std::vector<std::int64_t> stride(rank, 1);
  for (std::size_t a = rank; a-- > 0;) {
    if (a + 1 < rank) stride[a] = stride[a + 1] * global_shape[a + 1];
    for (const auto& r : shard.axes[a]) {
      for (std::int64_t g = r.begin; g < r.end; ++g) to_global[a].push_back(g);
    }
    if (to_global[a].empty()) return;
  }
  if (rank == 0) {
    visit(0, 0);
    return;
  }
  std::vector<std::size_t> at(rank, 0);
  std::int64_t local = 0;
  while (true) {
    std::int64_t global = 0;
    for (std::size_t a = 0; a < rank; ++a) global += to_global[a][at[a]] * stride[a];
    visit(local++, global);
    std::size_t a = rank;
    while (a-- > 0) {
      if (++at[a] < to_global[a].size()) break;
      at[a] = 0;
      if (a == 0) return;
    }
  }
}

}  // namespace meshsim
