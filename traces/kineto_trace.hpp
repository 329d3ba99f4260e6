#pragma once
// Reads a PyTorch profiler (Kineto) Chrome trace: the GPU kernels of a training step, each linked
// to the CPU operators that launched it, so their shapes can be recovered.
//
// Kineto's format (torch.profiler's export_chrome_trace, `"traceEvents"` of complete "X" events,
// times in microseconds): CPU operators are `"cat": "cpu_op"` (with record_shapes=True their
// args hold "Input Dims", "Input type" and "Concrete Inputs" for scalars; collectives add a
// `record_param_comms` operator with "Collective name", "In msg nelems", "Out msg nelems",
// "Group size", "dtype"); launches are `"cat": "cuda_runtime"` (cudaLaunchKernel, with
// args.correlation); GPU work is `"cat": "kernel"` (also "gpu_memcpy", "gpu_memset") with
// args.correlation, args.stream and args.device. A kernel's launch is the runtime event of the
// same correlation id; the operators enclosing that launch on its CPU thread are the kernel's
// call stack (outermost first). Where no runtime event matches, the operator with the kernel's
// args["External id"] stands alone.
#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace meshsim {

struct KinetoCpuOp {
  std::string name;
  double ts_us = 0, dur_us = 0;
  std::string thread;   // "pid/tid"
  nlohmann::json args;  // the event's args (an object)
};

struct KinetoKernel {
  std::string name;
  std::string category;  // "kernel", "gpu_memcpy" or "gpu_memset"
  int device = 0;
  std::int64_t stream = 0;
  double ts_us = 0, dur_us = 0;
  std::vector<std::size_t> stack;  // indices into KinetoTrace::cpu_ops, outermost first
};

struct KinetoTrace {
  std::vector<KinetoCpuOp> cpu_ops;
  std::vector<KinetoKernel> kernels;  // ordered by (device, stream, start)
  int rank = 0, world_size = 1;       // "distributedInfo" when present
};

// Throws InputError naming `origin` and the event index and field on malformed input (not JSON,
// no traceEvents array, an X event without numeric ts/dur, a negative duration).
KinetoTrace read_kineto_trace(std::istream& in, std::string_view origin);

}  // namespace meshsim
