#pragma once
// Moving attention tensors between the fast kernels' buffers (rows at any place, named by
// RowSpans) and the reference's dense float64 arrays (the block's rows in order).
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/views.hpp"

namespace meshsim::kernels::test {

// Extents of a [batch, tokens, heads, dim] tensor.
struct Extents {
  std::int64_t batch, tokens, heads, dim;
  std::int64_t size() const { return batch * tokens * heads * dim; }
};

inline std::vector<std::int64_t> positions_of(std::span<const RowSpan> spans) {
  std::vector<std::int64_t> p;
  for (const RowSpan& s : spans) {
    for (std::int64_t i = 0; i < s.count; ++i) p.push_back(s.position + i);
  }
  return p;
}

// The spans' rows of a full [batch, tokens, heads, dim] tensor, densely [batch, n, heads, dim].
inline std::vector<double> gather_rows(std::span<const double> full, Extents e,
                                       std::span<const RowSpan> spans) {
  const std::int64_t width = e.heads * e.dim;
  std::vector<double> out;
  for (std::int64_t b = 0; b < e.batch; ++b) {
    for (const RowSpan& s : spans) {
      for (std::int64_t r = s.row; r < s.row + s.count; ++r) {
        const auto first = static_cast<std::size_t>((b * e.tokens + r) * width);
        out.insert(
            out.end(), full.begin() + static_cast<std::ptrdiff_t>(first),
            full.begin() + static_cast<std::ptrdiff_t>(first + static_cast<std::size_t>(width)));
      }
    }
  }
  return out;
}

// Adds a dense [batch, n, heads, dim] block into the spans' rows of a full tensor.
inline void scatter_add_rows(std::span<const double> dense, Extents e,
                             std::span<const RowSpan> spans, std::span<double> full) {
  const std::int64_t width = e.heads * e.dim;
  std::size_t i = 0;
  for (std::int64_t b = 0; b < e.batch; ++b) {
    for (const RowSpan& s : spans) {
      for (std::int64_t r = s.row; r < s.row + s.count; ++r) {
        const auto first = static_cast<std::size_t>((b * e.tokens + r) * width);
        for (std::int64_t c = 0; c < width; ++c)
          full[first + static_cast<std::size_t>(c)] += dense[i++];
      }
    }
  }
}

// The spans' columns of a full lse [batch, heads, tokens], densely [batch, heads, n].
inline std::vector<double> gather_lse(std::span<const double> full, std::int64_t batch,
                                      std::int64_t heads, std::int64_t tokens,
                                      std::span<const RowSpan> spans) {
  std::vector<double> out;
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads; ++h) {
      for (const RowSpan& s : spans) {
        for (std::int64_t r = s.row; r < s.row + s.count; ++r) {
          out.push_back(full[static_cast<std::size_t>((b * heads + h) * tokens + r)]);
        }
      }
    }
  }
  return out;
}

// Writes a dense [batch, heads, n] lse into the spans' columns of a full lse.
inline void scatter_lse(std::span<const double> dense, std::int64_t batch, std::int64_t heads,
                        std::int64_t tokens, std::span<const RowSpan> spans,
                        std::span<double> full) {
  std::size_t i = 0;
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads; ++h) {
      for (const RowSpan& s : spans) {
        for (std::int64_t r = s.row; r < s.row + s.count; ++r) {
          full[static_cast<std::size_t>((b * heads + h) * tokens + r)] = dense[i++];
        }
      }
    }
  }
}

}  // namespace meshsim::kernels::test
