#pragma once
// One rank's memory for a Program: a zero-initialized buffer per tensor slot of that rank (slot
// shape x dtype bytes, 64-byte aligned) plus a scratch buffer per stream for communication calls
// without a slot (a builder that models only the bytes moved) and for copies the backends need.
// Allocation happens once, before anything is timed. Slots of other ranks have no buffer.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sim/program.hpp"

namespace meshsim {

class TensorStore {
 public:
  // scratch_bytes[s]: bytes of scratch for stream s (missing entries: none).
  TensorStore(const Program& program, int rank,
              const std::vector<std::int64_t>& scratch_bytes = {});

  int rank() const { return rank_; }
  bool holds(SlotId slot) const;
  const TensorSlot& slot(SlotId slot) const;
  std::span<std::byte> bytes(SlotId slot);
  std::span<const std::byte> bytes(SlotId slot) const;
  std::span<std::byte> scratch(StreamId stream);

  // Bytes of a slot: product of its shape x dtype bytes.
  static std::int64_t slot_bytes(const TensorSlot& slot);
  std::int64_t total_slot_bytes() const { return total_slot_bytes_; }
  std::int64_t total_scratch_bytes() const { return total_scratch_bytes_; }

 private:
  struct Buffer {
    struct Free {
      void operator()(std::byte* p) const;
    };
    std::unique_ptr<std::byte, Free> data;
    std::size_t size = 0;
  };
  static Buffer allocate(std::int64_t bytes);

  const Program& program_;
  int rank_;
  std::vector<Buffer> slots_;    // indexed by slot id; empty for other ranks' slots
  std::vector<Buffer> scratch_;  // indexed by stream id
  std::int64_t total_slot_bytes_ = 0;
  std::int64_t total_scratch_bytes_ = 0;
};

}  // namespace meshsim
