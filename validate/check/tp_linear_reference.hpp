#pragma once
// The float64 reference of a tensor-parallel linear validation: the unsharded layer
// Y = X W^T (+ b), W [out, in] as torch.nn.Linear stores it, and its backward dX = dY W,
// dW = dY^T X, db = sum over rows of dY, from the run's x, w, b, dy as stored (kernels/reference).
#include <map>
#include <string>
#include <vector>

#include "schedules/tp_linear.hpp"
#include "validate/tensors/global_tensors.hpp"

namespace meshsim {

std::map<std::string, std::vector<double>> tp_linear_reference(
    const TpLinearConfig& config, const std::vector<GlobalTensorData>& tensors);

}  // namespace meshsim
