#include "kernels/views.hpp"

#include <algorithm>

namespace meshsim::kernels {

void kernel_check_failed(const char* function, const std::string& what) {
  throw KernelError(std::string("kernels::") + function + ": " + what);
}

VectorView vector_view(void* data, ScalarType type, std::int64_t size) {
  MESHSIM_KERNEL_CHECK(size >= 0, "negative size");
  return VectorView{data, type, size};
}

VectorView sub_vector(const VectorView& v, std::int64_t offset, std::int64_t size) {
  MESHSIM_KERNEL_CHECK(offset >= 0 && size >= 0 && offset + size <= v.size,
                       "sub-vector out of range");
  return VectorView{element_address(v.data, v.type, offset), v.type, size};
}

MatrixView matrix_view(void* data, ScalarType type, std::int64_t rows, std::int64_t cols) {
  MESHSIM_KERNEL_CHECK(rows >= 0 && cols >= 0, "negative extent");
  return MatrixView{data, type, rows, cols, cols};
}

MatrixView sub_matrix(const MatrixView& m, std::int64_t row, std::int64_t col, std::int64_t rows,
                      std::int64_t cols) {
  MESHSIM_KERNEL_CHECK(row >= 0 && col >= 0 && rows >= 0 && cols >= 0 && row + rows <= m.rows &&
                           col + cols <= m.cols,
                       "sub-matrix out of range");
  return MatrixView{element_address(m.data, m.type, row * m.ld + col), m.type, rows, cols, m.ld};
}

VectorView as_vector(const MatrixView& m) {
  MESHSIM_KERNEL_CHECK(m.ld == m.cols || m.rows <= 1, "matrix is not contiguous");
  return VectorView{m.data, m.type, m.rows * m.cols};
}

HeadsView heads_view(void* data, ScalarType type, std::int64_t batch, std::int64_t tokens,
                     std::int64_t heads, std::int64_t head_dim) {
  MESHSIM_KERNEL_CHECK(batch >= 0 && tokens >= 0 && heads >= 0 && head_dim >= 0, "negative extent");
  return HeadsView{
      data,    type, batch, tokens, heads, head_dim, tokens * heads * head_dim, heads * head_dim,
      head_dim};
}

KvViews kv_views(void* data, ScalarType type, std::int64_t batch, std::int64_t tokens,
                 std::int64_t heads, std::int64_t head_dim) {
  const HeadsView k = heads_view(data, type, batch, tokens, heads, head_dim);
  HeadsView v = k;
  v.data = element_address(data, type, batch * tokens * heads * head_dim);
  return KvViews{k, v};
}

LseView lse_view(void* data, ScalarType type, std::int64_t batch, std::int64_t heads,
                 std::int64_t tokens) {
  MESHSIM_KERNEL_CHECK(batch >= 0 && heads >= 0 && tokens >= 0, "negative extent");
  return LseView{data, type, batch, heads, tokens, heads * tokens, tokens};
}

std::vector<RowSpan> locate_rows(std::span<const PositionRange> wanted,
                                 std::span<const PositionRange> layout) {
  std::vector<std::int64_t> first_row(layout.size());
  std::int64_t rows = 0;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    MESHSIM_KERNEL_CHECK(layout[i].size() >= 0, "layout range with end < begin");
    first_row[i] = rows;
    rows += layout[i].size();
  }
  std::vector<RowSpan> out;
  for (const PositionRange& w : wanted) {
    MESHSIM_KERNEL_CHECK(w.size() >= 0, "wanted range with end < begin");
    std::int64_t pos = w.begin;
    while (pos < w.end) {
      const auto piece = std::find_if(layout.begin(), layout.end(), [&](const PositionRange& l) {
        return l.begin <= pos && pos < l.end;
      });
      if (piece == layout.end()) {
        kernel_check_failed(__func__, "position " + std::to_string(pos) +
                                          " is not held by the buffer's token layout");
      }
      const auto i = static_cast<std::size_t>(piece - layout.begin());
      const std::int64_t n = std::min(w.end, piece->end) - pos;
      const RowSpan span{first_row[i] + (pos - piece->begin), pos, n};
      if (!out.empty() && out.back().row + out.back().count == span.row &&
          out.back().position + out.back().count == span.position) {
        out.back().count += n;  // continues the previous piece in rows and positions
      } else {
        out.push_back(span);
      }
      pos += n;
    }
  }
  return out;
}

std::vector<RowSpan> all_rows(std::span<const PositionRange> layout) {
  return locate_rows(layout, layout);
}

std::int64_t total_rows(std::span<const RowSpan> rows) {
  std::int64_t n = 0;
  for (const RowSpan& r : rows) n += r.count;
  return n;
}

}  // namespace meshsim::kernels
