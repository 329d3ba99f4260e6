#include "kernels/cpu/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/convert.hpp"
#include "kernels/elementwise_math.hpp"

namespace meshsim::kernels::cpu {
namespace {

constexpr std::int64_t kChunk = 4096;

template <class M>
void adam_in(const AdamConfig& c, std::int64_t step, const VectorView& param,
             const VectorView& grad, const VectorView& m, const VectorView& v,
             const VectorView& master) {
  const double t = static_cast<double>(step);
  const AdamStep<M> s{static_cast<M>(c.lr),
                      static_cast<M>(c.beta1),
                      static_cast<M>(c.beta2),
                      static_cast<M>(c.eps),
                      static_cast<M>(c.weight_decay),
                      static_cast<M>(1.0 - c.beta1),
                      static_cast<M>(1.0 - c.beta2),
                      static_cast<M>(1.0 - std::pow(c.beta1, t)),
                      static_cast<M>(std::sqrt(1.0 - std::pow(c.beta2, t)))};
  const VectorView& weights = master.data != nullptr ? master : param;
  const auto chunk = static_cast<std::size_t>(std::min(kChunk, param.size));
  std::vector<M> ps(chunk), gs(chunk), ms(chunk), vs(chunk);
  for (std::int64_t i0 = 0; i0 < param.size; i0 += kChunk) {
    const std::int64_t n = std::min(kChunk, param.size - i0);
    load(element_address(weights.data, weights.type, i0), weights.type, n, ps.data());
    load(element_address(grad.data, grad.type, i0), grad.type, n, gs.data());
    load(element_address(m.data, m.type, i0), m.type, n, ms.data());
    load(element_address(v.data, v.type, i0), v.type, n, vs.data());
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
      ps[i] = adam_element(s, ps[i], gs[i], ms[i], vs[i]);
    }
    store(ms.data(), n, element_address(m.data, m.type, i0), m.type);
    store(vs.data(), n, element_address(v.data, v.type, i0), v.type);
    store(ps.data(), n, element_address(weights.data, weights.type, i0), weights.type);
    if (master.data != nullptr) {
      store(ps.data(), n, element_address(param.data, param.type, i0), param.type);
    }
  }
}

}  // namespace

void adam_update(const AdamConfig& config, std::int64_t step, const VectorView& param,
                 const VectorView& grad, const VectorView& exp_avg, const VectorView& exp_avg_sq,
                 const VectorView& master) {
  MESHSIM_KERNEL_CHECK(step >= 1, "Adam steps count from 1");
  MESHSIM_KERNEL_CHECK(
      grad.size == param.size && exp_avg.size == param.size && exp_avg_sq.size == param.size,
      "param, grad and moment sizes differ");
  MESHSIM_KERNEL_CHECK(master.data == nullptr || master.size == param.size,
                       "master copy size differs from param's");
  const bool dbl = math_in_double(param.type, grad.type, exp_avg.type, exp_avg_sq.type) ||
                   (master.data != nullptr && master.type == ScalarType::fp64);
  if (dbl) {
    adam_in<double>(config, step, param, grad, exp_avg, exp_avg_sq, master);
  } else {
    adam_in<float>(config, step, param, grad, exp_avg, exp_avg_sq, master);
  }
}

}  // namespace meshsim::kernels::cpu
