#include "validate/check/tp_linear_reference.hpp"

#include "kernels/reference/gemm.hpp"
#include "kernels/reference/vector_ops.hpp"
#include "validate/check/numerics.hpp"

namespace meshsim {

std::map<std::string, std::vector<double>> tp_linear_reference(
    const TpLinearConfig& c, const std::vector<GlobalTensorData>& tensors) {
  namespace ref = kernels::reference;
  const std::int64_t t = c.tokens, in = c.in_features, out = c.out_features;
  const auto& x = find_tensor(tensors, "x").values;
  const auto& w = find_tensor(tensors, "w").values;
  std::map<std::string, std::vector<double>> r;
  if (c.pass != TpPass::bwd) {
    std::vector<double> y(static_cast<std::size_t>(t * out));
    ref::gemm(t, out, in, false, true, 1.0, x, w, 0.0, y);  // Y [t, out] = X [t, in] W^T
    if (c.bias) ref::add_bias(t, out, y, find_tensor(tensors, "b").values);
    r["y"] = std::move(y);
  }
  if (c.pass != TpPass::fwd) {
    const auto& dy = find_tensor(tensors, "dy").values;
    std::vector<double> dx(static_cast<std::size_t>(t * in));
    std::vector<double> dw(static_cast<std::size_t>(out * in));
    ref::gemm(t, in, out, false, false, 1.0, dy, w, 0.0, dx);  // dX [t, in] = dY [t, out] W
    ref::gemm(out, in, t, true, false, 1.0, dy, x, 0.0, dw);   // dW [out, in] = dY^T X
    r["dx"] = std::move(dx);
    r["dw"] = std::move(dw);
    if (c.bias) {
      std::vector<double> db(static_cast<std::size_t>(out), 0.0);
      ref::bias_grad(t, out, dy, db);
      r["db"] = std::move(db);
    }
  }
  return r;
}

}  // namespace meshsim
