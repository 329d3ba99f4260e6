#include "kernels/reference/optimizer.hpp"

#include <cmath>
#include <stdexcept>

namespace meshsim::kernels::reference {

void adam_update(const AdamHyper& hyper, std::int64_t t, std::span<double> param,
                 std::span<const double> grad, std::span<double> m, std::span<double> v) {
  if (grad.size() != param.size() || m.size() != param.size() || v.size() != param.size() ||
      t < 1) {
    throw std::invalid_argument("reference::adam_update: sizes differ or t < 1");
  }
  const double step = static_cast<double>(t);
  for (std::size_t i = 0; i < param.size(); ++i) {
    param[i] *= 1.0 - hyper.lr * hyper.weight_decay;
    m[i] = hyper.beta1 * m[i] + (1.0 - hyper.beta1) * grad[i];
    v[i] = hyper.beta2 * v[i] + (1.0 - hyper.beta2) * grad[i] * grad[i];
    const double m_hat = m[i] / (1.0 - std::pow(hyper.beta1, step));
    const double v_hat = v[i] / (1.0 - std::pow(hyper.beta2, step));
    param[i] -= hyper.lr * m_hat / (std::sqrt(v_hat) + hyper.eps);
  }
}

}  // namespace meshsim::kernels::reference
