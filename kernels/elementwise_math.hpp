#pragma once
// Per-element math of the elementwise, loss and optimizer kernels, shared by the CPU kernels and
// (later) the CUDA kernels. T is float or double.
#include <cmath>
#include <cstdint>

#include "kernels/host_device.hpp"

namespace meshsim::kernels {

enum class Activation : std::uint8_t {
  identity,
  relu,       // max(x, 0)
  gelu,       // x * Phi(x), Phi the standard normal CDF (PyTorch's exact GELU)
  gelu_tanh,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (GELU's tanh approximation)
  silu,       // x * sigmoid(x)
};

template <class T>
MESHSIM_HD inline T activation_value(Activation a, T x) {
  switch (a) {
    case Activation::identity:
      return x;
    case Activation::relu:
      return x > T(0) ? x : T(0);
    case Activation::gelu:
      return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
    case Activation::gelu_tanh: {
      const T u = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
      return T(0.5) * x * (T(1) + std::tanh(u));
    }
    case Activation::silu:
      return x / (T(1) + std::exp(-x));
  }
  return x;
}

// d activation(x) / dx.
template <class T>
MESHSIM_HD inline T activation_derivative(Activation a, T x) {
  switch (a) {
    case Activation::identity:
      return T(1);
    case Activation::relu:
      return x > T(0) ? T(1) : T(0);
    case Activation::gelu: {
      // Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
      const T cdf = T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440)));
      const T pdf = T(0.39894228040143267794) * std::exp(T(-0.5) * x * x);
      return cdf + x * pdf;
    }
    case Activation::gelu_tanh: {
      const T k = T(0.79788456080286535588);
      const T t = std::tanh(k * (x + T(0.044715) * x * x * x));
      return T(0.5) * (T(1) + t) +
             T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * T(0.044715) * x * x);
    }
    case Activation::silu: {
      const T s = T(1) / (T(1) + std::exp(-x));
      return s * (T(1) + x * (T(1) - s));
    }
  }
  return T(1);
}

// One Adam step (Kingma & Ba; PyTorch's torch.optim.Adam/AdamW arithmetic) for one element:
//   p <- p - lr * weight_decay * p                      (decoupled weight decay, AdamW; 0: Adam)
//   m <- beta1 m + (1 - beta1) g,   v <- beta2 v + (1 - beta2) g^2
//   p <- p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The constants are computed in float64 by the caller and rounded once to T (1 - beta2 in
// float32 arithmetic would be off by 1e-5 relative: 0.999f is not 0.999).
template <class T>
struct AdamStep {
  T lr, beta1, beta2, eps, weight_decay;
  T one_minus_beta1, one_minus_beta2;  // 1 - beta1, 1 - beta2
  T bias_correction1;                  // 1 - beta1^t
  T bias_correction2_sqrt;             // sqrt(1 - beta2^t)
};

template <class T>
MESHSIM_HD inline T adam_element(const AdamStep<T>& s, T param, T grad, T& m, T& v) {
  param -= s.lr * s.weight_decay * param;
  m = s.beta1 * m + s.one_minus_beta1 * grad;
  v = s.beta2 * v + s.one_minus_beta2 * grad * grad;
  const T denom = std::sqrt(v) / s.bias_correction2_sqrt + s.eps;
  return param - (s.lr / s.bias_correction1) * m / denom;
}

}  // namespace meshsim::kernels
