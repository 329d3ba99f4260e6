#include "validate/run/slot_views.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

std::string shape_text(const TensorSlot& s) {
  return fmt::format("slot {} '{}' [{}]", s.id, s.name, fmt::join(s.shape, ", "));
}

std::int64_t total(const std::vector<kernels::PositionRange>& ranges) {
  std::int64_t n = 0;
  for (const auto& r : ranges) n += r.size();
  return n;
}

}  // namespace

kernels::ScalarType scalar_type(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return kernels::ScalarType::bf16;
    case DType::fp16:
      return kernels::ScalarType::fp16;
    case DType::fp32:
      return kernels::ScalarType::fp32;
    case DType::fp64:
      return kernels::ScalarType::fp64;
  }
  MESHSIM_CHECK(false, "unknown dtype");
  return kernels::ScalarType::fp32;
}

std::vector<kernels::PositionRange> position_ranges(const std::vector<TokenRange>& tokens) {
  std::vector<kernels::PositionRange> out;
  out.reserve(tokens.size());
  for (const auto& t : tokens) out.push_back({t.begin, t.end});
  return out;
}

void* SlotViews::data(SlotId id) const {
  return store_.bytes(id).data();
}

std::int64_t SlotViews::elements(SlotId id) const {
  std::int64_t n = 1;
  for (std::int64_t d : slot(id).shape) n *= d;
  return n;
}

kernels::VectorView SlotViews::vector(SlotId id) const {
  return kernels::vector_view(data(id), scalar_type(slot(id).dtype), elements(id));
}

kernels::MatrixView SlotViews::matrix(SlotId id, std::int64_t rows, std::int64_t cols) const {
  MESHSIM_CHECK(elements(id) == rows * cols,
                fmt::format("{} is not a [{}, {}] matrix", shape_text(slot(id)), rows, cols));
  return kernels::matrix_view(data(id), scalar_type(slot(id).dtype), rows, cols);
}

kernels::HeadsView SlotViews::heads(SlotId id, std::int64_t heads) const {
  const TensorSlot& s = slot(id);
  MESHSIM_CHECK(s.shape.size() == 4 && s.shape[2] == heads,
                fmt::format("{} is not [batch, tokens, {}, head_dim]", shape_text(s), heads));
  return kernels::heads_view(data(id), scalar_type(s.dtype), s.shape[0], s.shape[1], s.shape[2],
                             s.shape[3]);
}

kernels::LseView SlotViews::lse(SlotId id) const {
  const TensorSlot& s = slot(id);
  MESHSIM_CHECK(s.shape.size() == 3,
                fmt::format("{} is not [batch, heads, tokens]", shape_text(s)));
  return kernels::lse_view(data(id), scalar_type(s.dtype), s.shape[0], s.shape[1], s.shape[2]);
}

std::int64_t SlotViews::kv_parts(SlotId id) const {
  const TensorSlot& s = slot(id);
  MESHSIM_CHECK(s.shape.size() == 5 || s.shape.size() == 6,
                fmt::format("{} is not a packed K/V buffer", shape_text(s)));
  return s.shape.size() == 6 ? s.shape[0] : 1;
}

kernels::KvViews SlotViews::kv(SlotId id, std::int64_t part) const {
  const TensorSlot& s = slot(id);
  const std::int64_t parts = kv_parts(id);
  MESHSIM_CHECK(part >= 0 && part < parts, fmt::format("{}: no part {}", shape_text(s), part));
  const std::size_t o = parts > 1 ? 1 : 0;
  MESHSIM_CHECK(s.shape[o] == 2, fmt::format("{} is not a packed K/V buffer", shape_text(s)));
  const std::int64_t batch = s.shape[o + 1], tokens = s.shape[o + 2], heads = s.shape[o + 3],
                     dim = s.shape[o + 4];
  const kernels::ScalarType t = scalar_type(s.dtype);
  void* base = kernels::element_address(data(id), t, part * 2 * batch * tokens * heads * dim);
  return kernels::kv_views(base, t, batch, tokens, heads, dim);
}

std::vector<kernels::PositionRange> SlotViews::token_layout(SlotId id, std::int64_t part) const {
  const TensorSlot& s = slot(id);
  const std::vector<kernels::PositionRange> all = position_ranges(s.tokens);
  MESHSIM_CHECK(!all.empty(), fmt::format("{} has no token positions", shape_text(s)));
  const std::int64_t parts = s.shape.size() == 6 ? s.shape[0] : 1;
  if (parts == 1) return all;
  // Each part holds total / parts rows; split the list at those row counts.
  const std::int64_t per_part = total(all) / parts;
  std::vector<kernels::PositionRange> out;
  std::int64_t row = 0;
  for (const auto& r : all) {
    if (row >= part * per_part && row < (part + 1) * per_part) out.push_back(r);
    row += r.size();
  }
  MESHSIM_CHECK(
      total(out) == per_part,
      fmt::format("{}: token positions do not split into {} parts", shape_text(s), parts));
  return out;
}

std::int64_t SlotViews::part_holding(SlotId id, const std::vector<TokenRange>& wanted) const {
  const std::int64_t parts = kv_parts(id);
  for (std::int64_t p = 0; p < parts; ++p) {
    const auto layout = token_layout(id, p);
    bool all_in = true;
    for (const auto& w : wanted) {
      bool found = false;
      for (const auto& l : layout) found = found || (w.begin >= l.begin && w.end <= l.end);
      all_in = all_in && found;
    }
    if (all_in) return p;
  }
  MESHSIM_CHECK(false, fmt::format("{}: no part holds the wanted positions", shape_text(slot(id))));
  return 0;
}

}  // namespace meshsim
