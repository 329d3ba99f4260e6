#pragma once
// The Program's accumulate and copy kernels, and small vector helpers. Any storage types; math in
// float32 unless an operand is fp64; one rounding per stored element.
#include "kernels/views.hpp"

namespace meshsim::kernels::cpu {

// y += alpha x (the accumulate kernel: dQ, dK/dV accumulators, gradient sums).
void accumulate(const VectorView& x, const VectorView& y, double alpha = 1.0);

// dst = src converted to dst's type (the copy kernel: casts such as fp32 accumulator -> bf16
// output). Slices and concatenations are copies between sub_vector()/sub_matrix() views.
void copy(const VectorView& src, const VectorView& dst);
// The strided form: rows x cols elements from src to dst (equal extents, any leading dimensions).
void copy(const MatrixView& src, const MatrixView& dst);

// v[i] = value.
void fill(const VectorView& v, double value);
// v[i] *= alpha.
void scale(const VectorView& v, double alpha);

}  // namespace meshsim::kernels::cpu
