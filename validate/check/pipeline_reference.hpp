#pragma once
// The float64 reference of a pipeline validation: the unpipelined model (every stage's layer in
// order, one microbatch at a time, gradients summed over the microbatches) computed with
// kernels/reference from the run's input tensors as stored. Keys are the pipeline layout's output
// tensor names; values row-major in that tensor's global shape.
#include <map>
#include <string>
#include <vector>

#include "schedules/pipeline.hpp"
#include "validate/tensors/global_tensors.hpp"

namespace meshsim {

std::map<std::string, std::vector<double>> pipeline_reference(
    const PipelineConfig& config, const std::vector<GlobalTensorData>& tensors);

}  // namespace meshsim
