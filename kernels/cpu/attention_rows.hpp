#pragma once
// Internal to kernels/cpu's attention kernels: the rows of a block expanded one by one, gathering
// a head's rows into contiguous math-type scratch and scattering results back, and the tiling.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/convert.hpp"

namespace meshsim::kernels::cpu::detail {

// Tile sizes of the blocked loops: a [kQueryTile x kKeyTile] score tile stays in cache.
inline constexpr std::int64_t kQueryTile = 128;
inline constexpr std::int64_t kKeyTile = 256;

// A block's rows one by one: the buffer row and the global position of each.
struct Rows {
  std::vector<std::int64_t> row;
  std::vector<std::int64_t> position;
  std::int64_t size() const { return static_cast<std::int64_t>(row.size()); }
};

Rows expand_rows(std::span<const RowSpan> spans, std::int64_t tokens, const char* what);

// The [min, max] positions of rows [begin, begin + count).
struct PositionSpan {
  std::int64_t min, max;
};
inline PositionSpan position_span(const Rows& r, std::int64_t begin, std::int64_t count) {
  const auto first = r.position.begin() + begin;
  const auto [lo, hi] = std::minmax_element(first, first + count);
  return PositionSpan{*lo, *hi};
}

// How a causal mask meets a (query tile) x (key tile): nothing visible, everything, or some.
enum class TileMask : std::uint8_t { hidden, full, partial };
inline TileMask classify_tile(Mask mask, PositionSpan q, PositionSpan k) {
  if (mask == Mask::none || k.max <= q.min) return TileMask::full;
  if (k.min > q.max) return TileMask::hidden;
  return TileMask::partial;
}

// Checks q/k/v against each other and the block; returns the softmax scale.
double check_block(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                   const HeadsView& v);
// Checks that t has the extents of `like` (and the head count `heads`).
void check_same_extents(const HeadsView& t, const HeadsView& like, const char* what);
void check_lse(const LseView& lse, const HeadsView& q, const char* what);

inline std::int64_t offset(const HeadsView& t, std::int64_t b, std::int64_t row, std::int64_t h) {
  return b * t.batch_stride + row * t.token_stride + h * t.head_stride;
}

// dst[i, :] = t[b, rows.row[begin + i], h, :] for i < count (dst is [count, head_dim]).
template <class M>
void gather(const HeadsView& t, std::int64_t b, std::int64_t h, const Rows& rows,
            std::int64_t begin, std::int64_t count, M* dst) {
  for (std::int64_t i = 0; i < count; ++i) {
    const auto r = rows.row[static_cast<std::size_t>(begin + i)];
    load(element_address(t.data, t.type, offset(t, b, r, h)), t.type, t.head_dim,
         dst + i * t.head_dim);
  }
}

// t[b, rows.row[begin + i], h, :] (+)= src[i, :] for i < count.
template <class M>
void scatter(const M* src, const HeadsView& t, std::int64_t b, std::int64_t h, const Rows& rows,
             std::int64_t begin, std::int64_t count, Store mode) {
  for (std::int64_t i = 0; i < count; ++i) {
    const auto r = rows.row[static_cast<std::size_t>(begin + i)];
    store(src + i * t.head_dim, t.head_dim, element_address(t.data, t.type, offset(t, b, r, h)),
          t.type, mode);
  }
}

inline void* lse_address(const LseView& lse, std::int64_t b, std::int64_t h, std::int64_t row) {
  return element_address(lse.data, lse.type, b * lse.batch_stride + h * lse.head_stride + row);
}

template <class M>
M load_lse(const LseView& lse, std::int64_t b, std::int64_t h, std::int64_t row) {
  M value{};
  load(lse_address(lse, b, h, row), lse.type, 1, &value);
  return value;
}

template <class M>
void store_lse(const LseView& lse, std::int64_t b, std::int64_t h, std::int64_t row, M value) {
  store(&value, 1, lse_address(lse, b, h, row), lse.type);
}

}  // namespace meshsim::kernels::cpu::detail
