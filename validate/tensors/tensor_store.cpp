#include "validate/tensors/tensor_store.hpp"

#include <cstring>
#include <limits>
#include <new>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

constexpr std::align_val_t kAlignment{64};

}  // namespace

void TensorStore::Buffer::Free::operator()(std::byte* p) const {
  ::operator delete[](p, kAlignment);
}

TensorStore::Buffer TensorStore::allocate(std::int64_t bytes) {
  Buffer b;
  if (bytes <= 0) return b;
  const auto n = static_cast<std::size_t>(bytes);
  b.data.reset(static_cast<std::byte*>(::operator new[](n, kAlignment)));
  std::memset(b.data.get(), 0, n);
  b.size = n;
  return b;
}

std::int64_t TensorStore::slot_bytes(const TensorSlot& slot) {
  std::int64_t n = dtype_bytes(slot.dtype);
  for (std::int64_t d : slot.shape) {
    if (d < 0)
      throw InputError(fmt::format("tensor slot '{}': negative dimension {}", slot.name, d));
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) {
      throw InputError(fmt::format("tensor slot '{}': size overflows 64 bits", slot.name));
    }
    n *= d;
  }
  return n;
}

TensorStore::TensorStore(const Program& program, int rank,
                         const std::vector<std::int64_t>& scratch_bytes)
    : program_(program), rank_(rank) {
  slots_.resize(program.slots.size());
  for (const TensorSlot& s : program.slots) {
    if (s.rank != rank) continue;
    const std::int64_t n = slot_bytes(s);
    try {
      slots_[static_cast<std::size_t>(s.id)] = allocate(n);
    } catch (const std::bad_alloc&) {
      throw InputError(fmt::format(
          "rank {}: cannot allocate tensor slot '{}' ({} bytes; {} bytes allocated so far)", rank,
          s.name, n, total_slot_bytes_));
    }
    total_slot_bytes_ += n;
  }
  scratch_.resize(program.streams.size());
  for (std::size_t s = 0; s < scratch_bytes.size() && s < scratch_.size(); ++s) {
    scratch_[s] = allocate(scratch_bytes[s]);
    total_scratch_bytes_ += scratch_bytes[s];
  }
}

bool TensorStore::holds(SlotId slot) const {
  return slot >= 0 && static_cast<std::size_t>(slot) < slots_.size() &&
         program_.slots[static_cast<std::size_t>(slot)].rank == rank_;
}

const TensorSlot& TensorStore::slot(SlotId slot) const {
  MESHSIM_CHECK(holds(slot), fmt::format("rank {}: slot {} is not this rank's", rank_, slot));
  return program_.slots[static_cast<std::size_t>(slot)];
}

std::span<std::byte> TensorStore::bytes(SlotId slot) {
  MESHSIM_CHECK(holds(slot), fmt::format("rank {}: slot {} is not this rank's", rank_, slot));
  Buffer& b = slots_[static_cast<std::size_t>(slot)];
  return {b.data.get(), b.size};
}

std::span<const std::byte> TensorStore::bytes(SlotId slot) const {
  MESHSIM_CHECK(holds(slot), fmt::format("rank {}: slot {} is not this rank's", rank_, slot));
  const Buffer& b = slots_[static_cast<std::size_t>(slot)];
  return {b.data.get(), b.size};
}

std::span<std::byte> TensorStore::scratch(StreamId stream) {
  MESHSIM_CHECK(stream >= 0 && static_cast<std::size_t>(stream) < scratch_.size(),
                fmt::format("scratch: stream {} does not exist", stream));
  Buffer& b = scratch_[static_cast<std::size_t>(stream)];
  return {b.data.get(), b.size};
}

}  // namespace meshsim
