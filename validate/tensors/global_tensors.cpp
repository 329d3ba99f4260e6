#include "validate/tensors/global_tensors.hpp"

#include <cstring>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "validate/tensors/value_generator.hpp"

namespace meshsim {

std::vector<std::byte> pack_shards(const Program& program, const TensorLayout& layout,
                                   const TensorStore& store) {
  std::vector<std::byte> out;
  for (const TensorSlot& s : program.slots) {
    if (s.rank != store.rank() || layout.shard(s.rank, s.name) == nullptr) continue;
    const auto bytes = store.bytes(s.id);
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  return out;
}

std::vector<GlobalTensorData> assemble_global_tensors(
    const Program& program, const TensorLayout& layout,
    const std::vector<std::vector<std::byte>>& per_rank) {
  std::vector<GlobalTensorData> out;
  for (const GlobalTensor& t : layout.tensors()) {
    GlobalTensorData g;
    g.name = t.name;
    g.shape = t.shape;
    std::int64_t n = 1;
    for (std::int64_t d : t.shape) n *= d;
    g.values.assign(static_cast<std::size_t>(n), 0.0);
    out.push_back(std::move(g));
  }
  std::vector<std::size_t> at(per_rank.size(), 0);
  for (const TensorSlot& s : program.slots) {
    const ShardSpec* shard = layout.shard(s.rank, s.name);
    if (shard == nullptr) continue;
    const auto r = static_cast<std::size_t>(s.rank);
    MESHSIM_CHECK(r < per_rank.size(), fmt::format("no package from rank {}", s.rank));
    const std::int64_t bytes = TensorStore::slot_bytes(s);
    MESHSIM_CHECK(at[r] + static_cast<std::size_t>(bytes) <= per_rank[r].size(),
                  fmt::format("rank {}'s package ends before slot '{}'", s.rank, s.name));
    const std::byte* data = per_rank[r].data() + at[r];
    at[r] += static_cast<std::size_t>(bytes);
    std::size_t index = 0;
    while (out[index].name != shard->tensor) ++index;
    GlobalTensorData& g = out[index];
    g.dtype = s.dtype;
    for_each_element(*shard, g.shape, [&](std::int64_t local, std::int64_t global) {
      g.values[static_cast<std::size_t>(global)] = load_element(s.dtype, data, local);
    });
    g.elements_written += shard_elements(*shard);
  }
  return out;
}

std::vector<GlobalTensorData> dump_tensors(const TensorLayout& layout,
                                           std::vector<GlobalTensorData> tensors) {
  std::vector<GlobalTensorData> out;
  for (GlobalTensorData& g : tensors) {
    const GlobalTensor* t = layout.tensor(g.name);
    if (t == nullptr || t->parts.empty()) {
      out.push_back(std::move(g));
      continue;
    }
    MESHSIM_CHECK(!g.shape.empty() && g.shape[0] == static_cast<std::int64_t>(t->parts.size()),
                  fmt::format("'{}' does not split into {} parts", g.name, t->parts.size()));
    const std::size_t part = g.values.size() / t->parts.size();
    for (std::size_t k = 0; k < t->parts.size(); ++k) {
      GlobalTensorData p;
      p.name = t->parts[k];
      p.shape.assign(g.shape.begin() + 1, g.shape.end());
      p.dtype = g.dtype;
      p.values.assign(g.values.begin() + static_cast<std::ptrdiff_t>(k * part),
                      g.values.begin() + static_cast<std::ptrdiff_t>((k + 1) * part));
      p.elements_written = g.elements_written / static_cast<std::int64_t>(t->parts.size());
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace meshsim
