#pragma once
// Non-owning views of the buffers a kernel reads and writes (DLPack style: a pointer, an element
// type, a shape and strides in elements). The executor owns the memory; a view never allocates.
// Views are passed by const reference; whether a kernel reads or writes one is in its signature's
// documentation (inputs are never written).
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/scalar.hpp"

namespace meshsim::kernels {

// A kernel called with views that do not fit together (shapes, element types, rows out of range).
// That is a bug in the caller, so it derives from std::logic_error; the checks stay on in release
// builds and cost nothing next to the kernels' work.
class KernelError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

[[noreturn]] void kernel_check_failed(const char* function, const std::string& what);

// n contiguous elements.
struct VectorView {
  void* data = nullptr;
  ScalarType type = ScalarType::fp32;
  std::int64_t size = 0;
};

// A row-major matrix: element (i, j) at data[i * ld + j], ld >= cols.
struct MatrixView {
  void* data = nullptr;
  ScalarType type = ScalarType::fp32;
  std::int64_t rows = 0, cols = 0, ld = 0;
};

// An attention operand [batch, tokens, heads, head_dim] (q, k, v, out and their gradients);
// head_dim is contiguous, the other strides are in elements.
struct HeadsView {
  void* data = nullptr;
  ScalarType type = ScalarType::fp32;
  std::int64_t batch = 0, tokens = 0, heads = 0, head_dim = 0;
  std::int64_t batch_stride = 0, token_stride = 0, head_stride = 0;
};

// Log-sum-exps [batch, heads, tokens] (natural log), tokens contiguous.
struct LseView {
  void* data = nullptr;
  ScalarType type = ScalarType::fp32;
  std::int64_t batch = 0, heads = 0, tokens = 0;
  std::int64_t batch_stride = 0, head_stride = 0;
};

// The address of element `index` of a buffer of type t.
inline void* element_address(void* data, ScalarType t, std::int64_t index) {
  return static_cast<char*>(data) + index * scalar_bytes(t);
}

VectorView vector_view(void* data, ScalarType type, std::int64_t size);
VectorView sub_vector(const VectorView& v, std::int64_t offset, std::int64_t size);

MatrixView matrix_view(void* data, ScalarType type, std::int64_t rows, std::int64_t cols);
// Rows [row, row + rows) and columns [col, col + cols) of m (slices and concatenation targets).
MatrixView sub_matrix(const MatrixView& m, std::int64_t row, std::int64_t col, std::int64_t rows,
                      std::int64_t cols);
// A contiguous matrix's elements as a vector.
VectorView as_vector(const MatrixView& m);

// Contiguous [batch, tokens, heads, head_dim].
HeadsView heads_view(void* data, ScalarType type, std::int64_t batch, std::int64_t tokens,
                     std::int64_t heads, std::int64_t head_dim);

// The K and V halves of a packed [2, batch, tokens, heads, head_dim] buffer (the Program's kv
// slots; an all-gathered buffer [ranks, 2, batch, tokens, heads, head_dim] is ranks such buffers
// in a row: pass element_address(data, type, s * 2 * batch * tokens * heads * head_dim) for rank
// s's part).
struct KvViews {
  HeadsView k, v;
};
KvViews kv_views(void* data, ScalarType type, std::int64_t batch, std::int64_t tokens,
                 std::int64_t heads, std::int64_t head_dim);

// Contiguous [batch, heads, tokens].
LseView lse_view(void* data, ScalarType type, std::int64_t batch, std::int64_t heads,
                 std::int64_t tokens);

// Global sequence positions [begin, end) (the Program's TokenRange).
struct PositionRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
  bool operator==(const PositionRange&) const = default;
};

// Rows [row, row + count) of a buffer hold the global positions [position, position + count).
struct RowSpan {
  std::int64_t row = 0;
  std::int64_t position = 0;
  std::int64_t count = 0;
  bool operator==(const RowSpan&) const = default;
};

// Where the positions `wanted` sit in a buffer whose rows hold the positions `layout`, in row
// order (a rank's rank_tokens(): ring one range, zigzag chunk r then chunk 2N-1-r). One RowSpan per
// maximal piece, in the order of `wanted`. Throws KernelError when a wanted position is not in the
// layout.
std::vector<RowSpan> locate_rows(std::span<const PositionRange> wanted,
                                 std::span<const PositionRange> layout);

// Rows [0, layout total) holding `layout` in order: every row of such a buffer.
std::vector<RowSpan> all_rows(std::span<const PositionRange> layout);

std::int64_t total_rows(std::span<const RowSpan> rows);

}  // namespace meshsim::kernels

// Argument check that stays on in release builds; throws KernelError naming the function.
#define MESHSIM_KERNEL_CHECK(cond, what)                                    \
  do {                                                                      \
    if (!(cond)) ::meshsim::kernels::kernel_check_failed(__func__, (what)); \
  } while (false)
