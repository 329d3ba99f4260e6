#pragma once
// Reference Adam/AdamW in float64, written from the algorithm (Kingma & Ba, Algorithm 1, with
// PyTorch's decoupled weight decay and epsilon placement).
#include <cstdint>
#include <span>

namespace meshsim::kernels::reference {

struct AdamHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
};

// Step t (1-based): param, m, v updated in place.
void adam_update(const AdamHyper& hyper, std::int64_t t, std::span<double> param,
                 std::span<const double> grad, std::span<double> m, std::span<double> v);

}  // namespace meshsim::kernels::reference
