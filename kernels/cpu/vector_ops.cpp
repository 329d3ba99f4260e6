#include "kernels/cpu/vector_ops.hpp"

#include <algorithm>
#include <vector>

#include "kernels/cpu/convert.hpp"

namespace meshsim::kernels::cpu {
namespace {

constexpr std::int64_t kChunk = 4096;

template <class M>
void accumulate_in(const VectorView& x, const VectorView& y, M alpha) {
  std::vector<M> xs(static_cast<std::size_t>(std::min(kChunk, x.size)));
  std::vector<M> ys(xs.size());
  for (std::int64_t i0 = 0; i0 < x.size; i0 += kChunk) {
    const std::int64_t n = std::min(kChunk, x.size - i0);
    load(element_address(x.data, x.type, i0), x.type, n, xs.data());
    load(element_address(y.data, y.type, i0), y.type, n, ys.data());
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) ys[i] += alpha * xs[i];
    store(ys.data(), n, element_address(y.data, y.type, i0), y.type);
  }
}

template <class M>
void scale_in(const VectorView& v, M alpha) {
  std::vector<M> vs(static_cast<std::size_t>(std::min(kChunk, v.size)));
  for (std::int64_t i0 = 0; i0 < v.size; i0 += kChunk) {
    const std::int64_t n = std::min(kChunk, v.size - i0);
    void* p = element_address(v.data, v.type, i0);
    load(p, v.type, n, vs.data());
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) vs[i] *= alpha;
    store(vs.data(), n, p, v.type);
  }
}

}  // namespace

void accumulate(const VectorView& x, const VectorView& y, double alpha) {
  MESHSIM_KERNEL_CHECK(x.size == y.size, "x and y sizes differ");
  if (math_in_double(x.type, y.type)) {
    accumulate_in<double>(x, y, alpha);
  } else {
    accumulate_in<float>(x, y, static_cast<float>(alpha));
  }
}

void copy(const VectorView& src, const VectorView& dst) {
  MESHSIM_KERNEL_CHECK(src.size == dst.size, "source and destination sizes differ");
  convert(src.data, src.type, dst.data, dst.type, src.size);
}

void copy(const MatrixView& src, const MatrixView& dst) {
  MESHSIM_KERNEL_CHECK(src.rows == dst.rows && src.cols == dst.cols,
                       "source and destination extents differ");
  for (std::int64_t i = 0; i < src.rows; ++i) {
    convert(element_address(src.data, src.type, i * src.ld), src.type,
            element_address(dst.data, dst.type, i * dst.ld), dst.type, src.cols);
  }
}

void fill(const VectorView& v, double value) {
  fill(v.data, v.type, v.size, value);
}

void scale(const VectorView& v, double alpha) {
  if (v.type == ScalarType::fp64) {
    scale_in<double>(v, alpha);
  } else {
    scale_in<float>(v, static_cast<float>(alpha));
  }
}

}  // namespace meshsim::kernels::cpu
