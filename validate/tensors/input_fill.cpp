#include "validate/tensors/input_fill.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "validate/tensors/value_generator.hpp"

namespace meshsim {

std::vector<SlotId> read_only_slots(const Program& program, int rank) {
  std::vector<char> read(program.slots.size(), 0), written(program.slots.size(), 0);
  auto mark = [](std::vector<char>& v, SlotId s) {
    if (s >= 0 && static_cast<std::size_t>(s) < v.size()) v[static_cast<std::size_t>(s)] = 1;
  };
  for (const Op& op : program.ops) {
    if (op.rank != rank) continue;
    if (const auto* k = std::get_if<KernelCall>(&op.body)) {
      for (SlotId s : k->inputs) mark(read, s);
      for (SlotId s : k->outputs) mark(written, s);
    } else if (const auto* p = std::get_if<P2PCall>(&op.body)) {
      for (const auto& t : p->sends) mark(read, t.slot);
      for (const auto& t : p->recvs) mark(written, t.slot);
    } else {
      const auto& c = std::get<CollectiveCall>(op.body);
      mark(read, c.input);
      mark(written, c.output);
    }
  }
  std::vector<SlotId> out;
  for (const TensorSlot& s : program.slots) {
    const auto i = static_cast<std::size_t>(s.id);
    if (s.rank == rank && read[i] != 0 && written[i] == 0) out.push_back(s.id);
  }
  return out;
}

FillSummary fill_inputs(TensorStore& store, const Program& program, const TensorLayout& layout,
                        std::uint64_t seed) {
  FillSummary summary;
  const int rank = store.rank();
  const std::vector<SlotId> read_only = read_only_slots(program, rank);
  for (const TensorSlot& slot : program.slots) {
    if (slot.rank != rank) continue;
    const std::span<std::byte> data = store.bytes(slot.id);
    const ShardSpec* shard = layout.shard(rank, slot.name);
    const GlobalTensor* tensor = shard != nullptr ? layout.tensor(shard->tensor) : nullptr;
    if (tensor != nullptr && tensor->input) {
      const std::int64_t elements = shard_elements(*shard);
      if (elements * dtype_bytes(slot.dtype) != static_cast<std::int64_t>(data.size())) {
        throw InputError(fmt::format(
            "rank {} slot '{}': the layout maps {} elements of '{}' onto a slot of {} bytes", rank,
            slot.name, elements, tensor->name, data.size()));
      }
      const ValueGenerator gen(seed, tensor->name, tensor->scale);
      for_each_element(*shard, tensor->shape, [&](std::int64_t local, std::int64_t global) {
        store_element(slot.dtype, data.data(), local, gen.raw(global));
      });
      ++summary.from_layout;
      summary.elements += elements;
    } else if (std::binary_search(read_only.begin(), read_only.end(), slot.id)) {
      const ValueGenerator gen(seed, fmt::format("rank{}/{}", rank, slot.name));
      const std::int64_t elements =
          static_cast<std::int64_t>(data.size()) / dtype_bytes(slot.dtype);
      for (std::int64_t i = 0; i < elements; ++i) {
        store_element(slot.dtype, data.data(), i, gen.raw(i));
      }
      ++summary.by_name;
      summary.elements += elements;
    }
  }
  return summary;
}

}  // namespace meshsim
