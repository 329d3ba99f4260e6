#pragma once
// The Program's elementwise kernels: the bias of a linear layer (forward add and backward
// reduction, as the tensor-parallel builder emits them) and activations with their derivatives
// (the MLP the pipeline validation trains). Any storage types; math in float32 unless an operand
// is fp64; reductions accumulate in float64.
#include "kernels/cpu/convert.hpp"
#include "kernels/elementwise_math.hpp"
#include "kernels/views.hpp"

namespace meshsim::kernels::cpu {

// y[i, j] += bias[j].
void add_bias(const MatrixView& y, const VectorView& bias);

// db[j] (+)= sum_i dy[i, j] (accumulated by default, like a main-grad buffer).
void bias_grad(const MatrixView& dy, const VectorView& db, Store mode = Store::accumulate);

// y[i] = f(x[i]) (x and y may be the same buffer).
void activation_forward(Activation f, const VectorView& x, const VectorView& y);

// dx[i] (+)= f'(x[i]) dy[i], x the activation's input.
void activation_backward(Activation f, const VectorView& x, const VectorView& dy,
                         const VectorView& dx, Store mode = Store::overwrite);

}  // namespace meshsim::kernels::cpu
