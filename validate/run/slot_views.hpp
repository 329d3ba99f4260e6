#pragma once
// Views of a rank's tensor slots for the kernels (host addresses; the CUDA backend maps them): the
// slot's bytes in the TensorStore seen through kernels/views.hpp with the slot's dtype and shape,
// and the token positions attention slots carry (TensorSlot::tokens) as the kernels' row layouts.
// Every accessor checks the slot's shape against what the kernel call expects and throws
// InvariantError naming the slot.
#include <cstdint>
#include <vector>

#include "kernels/views.hpp"
#include "sim/program.hpp"
#include "validate/tensors/tensor_store.hpp"

namespace meshsim {

kernels::ScalarType scalar_type(DType dtype);

class SlotViews {
 public:
  explicit SlotViews(TensorStore& store) : store_(store) {}

  const TensorSlot& slot(SlotId id) const { return store_.slot(id); }
  std::int64_t elements(SlotId id) const;

  // The whole slot as n contiguous elements.
  kernels::VectorView vector(SlotId id) const;
  // The slot as a row-major [rows, cols] matrix (its element count must be rows x cols).
  kernels::MatrixView matrix(SlotId id, std::int64_t rows, std::int64_t cols) const;
  // A [batch, tokens, heads, head_dim] slot.
  kernels::HeadsView heads(SlotId id, std::int64_t heads) const;
  // A [batch, heads, tokens] log-sum-exp slot.
  kernels::LseView lse(SlotId id) const;
  // Part `part` of a packed [2, batch, tokens, heads, head_dim] K/V slot (or of an all-gathered
  // [parts, 2, batch, tokens, heads, head_dim] one).
  kernels::KvViews kv(SlotId id, std::int64_t part = 0) const;
  std::int64_t kv_parts(SlotId id) const;

  // The slot's token positions (of part `part` for an all-gathered K/V slot) as row layout.
  std::vector<kernels::PositionRange> token_layout(SlotId id, std::int64_t part = 0) const;
  // The part of an all-gathered K/V slot that holds every position of `wanted`.
  std::int64_t part_holding(SlotId id, const std::vector<TokenRange>& wanted) const;

 private:
  void* data(SlotId id) const;
  TensorStore& store_;
};

std::vector<kernels::PositionRange> position_ranges(const std::vector<TokenRange>& tokens);

}  // namespace meshsim
