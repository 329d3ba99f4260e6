#include "kernels/cpu/elementwise.hpp"

#include <algorithm>
#include <vector>

namespace meshsim::kernels::cpu {
namespace {

constexpr std::int64_t kChunk = 4096;

template <class M>
void add_bias_in(const MatrixView& y, const VectorView& bias) {
  std::vector<M> b(static_cast<std::size_t>(y.cols)), row(b.size());
  load(bias.data, bias.type, y.cols, b.data());
  for (std::int64_t i = 0; i < y.rows; ++i) {
    void* p = element_address(y.data, y.type, i * y.ld);
    load(p, y.type, y.cols, row.data());
    for (std::size_t j = 0; j < row.size(); ++j) row[j] += b[j];
    store(row.data(), y.cols, p, y.type);
  }
}

template <class M>
void activation_forward_in(Activation f, const VectorView& x, const VectorView& y) {
  std::vector<M> xs(static_cast<std::size_t>(std::min(kChunk, x.size)));
  for (std::int64_t i0 = 0; i0 < x.size; i0 += kChunk) {
    const std::int64_t n = std::min(kChunk, x.size - i0);
    load(element_address(x.data, x.type, i0), x.type, n, xs.data());
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
      xs[i] = activation_value(f, xs[i]);
    }
    store(xs.data(), n, element_address(y.data, y.type, i0), y.type);
  }
}

template <class M>
void activation_backward_in(Activation f, const VectorView& x, const VectorView& dy,
                            const VectorView& dx, Store mode) {
  std::vector<M> xs(static_cast<std::size_t>(std::min(kChunk, x.size))), gs(xs.size());
  for (std::int64_t i0 = 0; i0 < x.size; i0 += kChunk) {
    const std::int64_t n = std::min(kChunk, x.size - i0);
    load(element_address(x.data, x.type, i0), x.type, n, xs.data());
    load(element_address(dy.data, dy.type, i0), dy.type, n, gs.data());
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
      gs[i] *= activation_derivative(f, xs[i]);
    }
    store(gs.data(), n, element_address(dx.data, dx.type, i0), dx.type, mode);
  }
}

}  // namespace

void add_bias(const MatrixView& y, const VectorView& bias) {
  MESHSIM_KERNEL_CHECK(bias.size == y.cols, "bias size is not the matrix's column count");
  if (math_in_double(y.type, bias.type)) {
    add_bias_in<double>(y, bias);
  } else {
    add_bias_in<float>(y, bias);
  }
}

void bias_grad(const MatrixView& dy, const VectorView& db, Store mode) {
  MESHSIM_KERNEL_CHECK(db.size == dy.cols, "db size is not dy's column count");
  std::vector<double> sums(static_cast<std::size_t>(dy.cols), 0.0), row(sums.size());
  for (std::int64_t i = 0; i < dy.rows; ++i) {
    load(element_address(dy.data, dy.type, i * dy.ld), dy.type, dy.cols, row.data());
    for (std::size_t j = 0; j < row.size(); ++j) sums[j] += row[j];
  }
  store(sums.data(), dy.cols, db.data, db.type, mode);
}

void activation_forward(Activation f, const VectorView& x, const VectorView& y) {
  MESHSIM_KERNEL_CHECK(x.size == y.size, "x and y sizes differ");
  if (math_in_double(x.type, y.type)) {
    activation_forward_in<double>(f, x, y);
  } else {
    activation_forward_in<float>(f, x, y);
  }
}

void activation_backward(Activation f, const VectorView& x, const VectorView& dy,
                         const VectorView& dx, Store mode) {
  MESHSIM_KERNEL_CHECK(x.size == dy.size && dx.size == x.size, "x, dy and dx sizes differ");
  if (math_in_double(x.type, dy.type, dx.type)) {
    activation_backward_in<double>(f, x, dy, dx, mode);
  } else {
    activation_backward_in<float>(f, x, dy, dx, mode);
  }
}

}  // namespace meshsim::kernels::cpu
