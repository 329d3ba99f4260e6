#pragma once
// A rank's device memory for the CUDA backend: every buffer of its TensorStore (tensor slots and
// per-stream scratch) gets a place in one device allocation (cudaMalloc of total_bytes()), each at
// a 256-byte aligned offset, in slot order then stream order. The host TensorStore stays the
// staging copy: inputs are filled there and uploaded before the run, results downloaded after it,
// so the fills, CommArgs, the gathering and the dumps are those of the CPU backend. Any host
// address inside a buffer (a slot, a slice of it, a CommArgs pointer) maps to the same place on the
// device through offset_of().
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/program.hpp"
#include "validate/tensors/tensor_store.hpp"

namespace meshsim {

struct DeviceRegion {
  std::byte* host = nullptr;  // the TensorStore's buffer
  std::int64_t bytes = 0;
  std::int64_t offset = 0;  // in the device allocation
};

inline constexpr std::int64_t kDeviceAlignment = 256;

class DeviceMemoryPlan {
 public:
  DeviceMemoryPlan(const Program& program, TensorStore& store);

  std::int64_t total_bytes() const { return total_bytes_; }
  const std::vector<DeviceRegion>& regions() const { return regions_; }
  // The device offset of a host address inside (or one past the end of) a region; nullptr maps to
  // -1. Any other address is a bug (InvariantError).
  std::int64_t offset_of(const void* host) const;

 private:
  std::vector<DeviceRegion> regions_;  // in device offset order
  std::vector<std::size_t> by_host_;   // region indices sorted by host address
  std::int64_t total_bytes_ = 0;
};

}  // namespace meshsim
