// The memory-bound kernels on a CUDA device: accumulate, copy (with conversion), bias add and
// bias gradient, activations and their derivatives (kernels/elementwise_math.hpp). Grid-stride
// loops over contiguous vectors and row-major matrices (ld >= cols).
#include <string>

#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/device_access.cuh"
#include "kernels/elementwise_math.hpp"

namespace meshsim::kernels::cuda {
namespace {

using detail::load;
using detail::store;

__device__ inline std::int64_t first_index() {
  return blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
}
__device__ inline std::int64_t index_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

template <class M>
__global__ void accumulate_kernel(VectorView x, VectorView y, M alpha) {
  for (std::int64_t i = first_index(); i < y.size; i += index_stride()) {
    store<M>(y.data, y.type, i, load<M>(y.data, y.type, i) + alpha * load<M>(x.data, x.type, i));
  }
}

template <class M>
__global__ void copy_kernel(VectorView src, VectorView dst) {
  for (std::int64_t i = first_index(); i < dst.size; i += index_stride()) {
    store<M>(dst.data, dst.type, i, load<M>(src.data, src.type, i));
  }
}

template <class M>
__global__ void add_bias_kernel(MatrixView y, VectorView bias) {
  const std::int64_t n = y.rows * y.cols;
  for (std::int64_t i = first_index(); i < n; i += index_stride()) {
    const std::int64_t r = i / y.cols, c = i % y.cols;
    const std::int64_t at = r * y.ld + c;
    store<M>(y.data, y.type, at, load<M>(y.data, y.type, at) + load<M>(bias.data, bias.type, c));
  }
}

// One thread per column, rows summed in float64 (as the CPU kernel does).
__global__ void bias_grad_kernel(MatrixView dy, VectorView db) {
  for (std::int64_t c = first_index(); c < dy.cols; c += index_stride()) {
    double sum = 0;
    for (std::int64_t r = 0; r < dy.rows; ++r) sum += load<double>(dy.data, dy.type, r * dy.ld + c);
    store<double>(db.data, db.type, c, load<double>(db.data, db.type, c) + sum);
  }
}

template <class M>
__global__ void activation_kernel(Activation f, VectorView x, VectorView y) {
  for (std::int64_t i = first_index(); i < y.size; i += index_stride()) {
    store<M>(y.data, y.type, i, activation_value(f, load<M>(x.data, x.type, i)));
  }
}

template <class M>
__global__ void activation_backward_kernel(Activation f, VectorView x, VectorView dy,
                                           VectorView dx) {
  for (std::int64_t i = first_index(); i < dx.size; i += index_stride()) {
    const M g = activation_derivative(f, load<M>(x.data, x.type, i)) * load<M>(dy.data, dy.type, i);
    store<M>(dx.data, dx.type, i, g);
  }
}

void check_sizes(const VectorView& a, const VectorView& b, const char* what) {
  MESHSIM_KERNEL_CHECK(a.size == b.size, std::string(what) + ": sizes " + std::to_string(a.size) +
                                             " and " + std::to_string(b.size) + " differ");
}

}  // namespace

cudaError_t accumulate(const VectorView& x, const VectorView& y, double alpha,
                       cudaStream_t stream) {
  check_sizes(x, y, "accumulate");
  if (y.size == 0) return cudaSuccess;
  if (detail::any_fp64(x.type, y.type)) {
    accumulate_kernel<double><<<detail::grid_for(y.size), 256, 0, stream>>>(x, y, alpha);
  } else {
    accumulate_kernel<float>
        <<<detail::grid_for(y.size), 256, 0, stream>>>(x, y, static_cast<float>(alpha));
  }
  return cudaGetLastError();
}

cudaError_t copy(const VectorView& src, const VectorView& dst, cudaStream_t stream) {
  check_sizes(src, dst, "copy");
  if (dst.size == 0) return cudaSuccess;
  if (src.type == dst.type) {
    return cudaMemcpyAsync(dst.data, src.data,
                           static_cast<std::size_t>(dst.size * scalar_bytes(dst.type)),
                           cudaMemcpyDeviceToDevice, stream);
  }
  if (detail::any_fp64(src.type, dst.type)) {
    copy_kernel<double><<<detail::grid_for(dst.size), 256, 0, stream>>>(src, dst);
  } else {
    copy_kernel<float><<<detail::grid_for(dst.size), 256, 0, stream>>>(src, dst);
  }
  return cudaGetLastError();
}

cudaError_t add_bias(const MatrixView& y, const VectorView& bias, cudaStream_t stream) {
  MESHSIM_KERNEL_CHECK(bias.size == y.cols, "add_bias: bias size differs from the columns");
  const std::int64_t n = y.rows * y.cols;
  if (n == 0) return cudaSuccess;
  if (detail::any_fp64(y.type, bias.type)) {
    add_bias_kernel<double><<<detail::grid_for(n), 256, 0, stream>>>(y, bias);
  } else {
    add_bias_kernel<float><<<detail::grid_for(n), 256, 0, stream>>>(y, bias);
  }
  return cudaGetLastError();
}

cudaError_t bias_grad(const MatrixView& dy, const VectorView& db, cudaStream_t stream) {
  MESHSIM_KERNEL_CHECK(db.size == dy.cols, "bias_grad: db size differs from the columns");
  if (dy.cols == 0) return cudaSuccess;
  bias_grad_kernel<<<detail::grid_for(dy.cols), 256, 0, stream>>>(dy, db);
  return cudaGetLastError();
}

cudaError_t activation_forward(Activation f, const VectorView& x, const VectorView& y,
                               cudaStream_t stream) {
  check_sizes(x, y, "activation_forward");
  if (y.size == 0) return cudaSuccess;
  if (detail::any_fp64(x.type, y.type)) {
    activation_kernel<double><<<detail::grid_for(y.size), 256, 0, stream>>>(f, x, y);
  } else {
    activation_kernel<float><<<detail::grid_for(y.size), 256, 0, stream>>>(f, x, y);
  }
  return cudaGetLastError();
}

cudaError_t activation_backward(Activation f, const VectorView& x, const VectorView& dy,
                                const VectorView& dx, cudaStream_t stream) {
  check_sizes(x, dy, "activation_backward");
  check_sizes(x, dx, "activation_backward");
  if (dx.size == 0) return cudaSuccess;
  if (detail::any_fp64(x.type, dy.type, dx.type)) {
    activation_backward_kernel<double><<<detail::grid_for(dx.size), 256, 0, stream>>>(f, x, dy, dx);
  } else {
    activation_backward_kernel<float><<<detail::grid_for(dx.size), 256, 0, stream>>>(f, x, dy, dx);
  }
  return cudaGetLastError();
}

}  // namespace meshsim::kernels::cuda
