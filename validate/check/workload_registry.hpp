#pragma once
// The workloads meshsim both simulates and validates, one descriptor each (in the shape of
// nccl-tests' per-collective descriptors): its name, its configuration (an alternative of
// Workload::config), the Program it builds, the layout of its tensors, and its float64 reference.
// The simulating and validating sub-commands, the suite and --help iterate this table; the command
// line of each workload (flags, examples) is the CLI's (tools/workload_flags). Adding a workload:
// a descriptor here, its flag table there (besides its own builder, layout and reference).
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/dtype.hpp"
#include "sim/program.hpp"
#include "validate/tensors/global_tensors.hpp"
#include "validate/tensors/tensor_layout.hpp"
#include "validate/tensors/workload.hpp"

namespace meshsim {

// Reference values per tensor, as --dump names the tensors.
using ReferenceTensors = std::map<std::string, std::vector<double>>;

struct WorkloadDescriptor {
  std::string_view name;            // its sub-command: `meshsim <name>`, `meshsim validate <name>`
  std::string_view reference_name;  // for the report: "float64 full attention on one rank"
  std::size_t alternative = 0;      // its configuration's index in Workload::config
  Program (*build)(const Workload&) = nullptr;
  TensorLayout (*layout)(const Workload&) = nullptr;
  // Its outputs computed in float64 on one rank from the run's own input tensors (as stored).
  ReferenceTensors (*reference)(const Workload&, const std::vector<GlobalTensorData>&) = nullptr;
  // The dtype its ranks hand results over in, when a result stored finer is judged by it
  // (pipeline stages exchange activations and gradients in the workload's dtype); else nullopt.
  std::optional<DType> (*exchange_dtype)(const Workload&) = nullptr;
};

// Every workload, in --help order.
std::span<const WorkloadDescriptor> workload_registry();
// The descriptor of the workload's configuration.
const WorkloadDescriptor& workload_descriptor(const Workload& workload);
// The descriptor called `name`; null when there is none.
const WorkloadDescriptor* find_workload(std::string_view name);

Program build_program(const Workload& workload);       // workload_descriptor(workload).build
TensorLayout tensor_layout(const Workload& workload);  // workload_descriptor(workload).layout

}  // namespace meshsim
