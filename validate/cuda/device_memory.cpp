#include "validate/cuda/device_memory.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

std::int64_t align_up(std::int64_t bytes) {
  return (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

// Addresses of different buffers compare as integers (pointer comparison across objects is not
// defined by the language).
std::uintptr_t address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

}  // namespace

DeviceMemoryPlan::DeviceMemoryPlan(const Program& program, TensorStore& store) {
  auto add = [&](std::span<std::byte> buffer) {
    if (buffer.empty()) return;
    regions_.push_back(
        DeviceRegion{buffer.data(), static_cast<std::int64_t>(buffer.size()), total_bytes_});
    total_bytes_ = align_up(total_bytes_ + static_cast<std::int64_t>(buffer.size()));
  };
  for (const TensorSlot& slot : program.slots) {
    if (store.holds(slot.id)) add(store.bytes(slot.id));
  }
  for (std::size_t s = 0; s < program.streams.size(); ++s) {
    add(store.scratch(static_cast<StreamId>(s)));
  }
  by_host_.resize(regions_.size());
  for (std::size_t i = 0; i < by_host_.size(); ++i) by_host_[i] = i;
  std::sort(by_host_.begin(), by_host_.end(), [&](std::size_t a, std::size_t b) {
    return address(regions_[a].host) < address(regions_[b].host);
  });
}

std::int64_t DeviceMemoryPlan::offset_of(const void* host) const {
  if (host == nullptr) return -1;
  const std::uintptr_t p = address(host);
  // The last region starting at or before p.
  auto it = std::upper_bound(
      by_host_.begin(), by_host_.end(), p,
      [&](std::uintptr_t q, std::size_t r) { return q < address(regions_[r].host); });
  if (it != by_host_.begin()) {
    const DeviceRegion& r = regions_[*std::prev(it)];
    const auto delta = static_cast<std::int64_t>(p - address(r.host));
    if (delta <= r.bytes) return r.offset + delta;
  }
  MESHSIM_CHECK(false,
                fmt::format("address {} is not inside any tensor slot or scratch buffer", host));
  return -1;
}

}  // namespace meshsim
