#include "validate/cpu/cpu_kernel_runner.hpp"

#include <fmt/format.h>

#include "kernels/cpu/gemm.hpp"
#include "sim/error.hpp"
#include "validate/cpu/cpu_ops.hpp"

namespace meshsim {
CpuKernelRunner::CpuKernelRunner(TensorStore& store, InjectedFault fault)
    : store_(store), fault_(fault) {
  // Ranks and streams share the machine's cores: one BLAS thread per call.
  kernels::cpu::set_blas_threads(1);
}

void CpuKernelRunner::run(const Op& op, const KernelCall& call) {
  const SlotViews v(store_);
  try {
    switch (call.kind) {
      case KernelKind::gemm:
        if (call.fn == ElementwiseFn::none) {
          cpu_ops::gemm(v, call, fault_);
        } else {
          cpu_ops::gemm_activation(v, call, fault_);
        }
        return;
      case KernelKind::linear_bwd:
        cpu_ops::linear_backward(v, call, fault_);
        return;
      case KernelKind::attention_fwd:
        cpu_ops::attention_forward(v, call, fault_);
        return;
      case KernelKind::attention_bwd:
        cpu_ops::attention_backward(v, call, fault_);
        return;
      case KernelKind::lse_merge:
        cpu_ops::lse_merge(v, call, fault_);
        return;
      case KernelKind::accumulate:
        cpu_ops::accumulate(v, call);
        return;
      case KernelKind::copy:
        cpu_ops::copy(v, call);
        return;
      case KernelKind::elementwise:
        if (call.fn == ElementwiseFn::bias_add || call.fn == ElementwiseFn::bias_grad) {
          cpu_ops::bias(v, call);
        } else {
          cpu_ops::activation(v, call);
        }
        return;
      case KernelKind::loss:
        cpu_ops::loss(v, call);
        return;
      case KernelKind::optimizer_update:
        cpu_ops::optimizer_update(v, call);
        return;
    }
  } catch (const std::logic_error& e) {  // KernelError and InvariantError: a builder bug
    throw InvariantError(fmt::format("rank {} op {} '{}' ({}): {}", op.rank, op.id, op.name,
                                     to_string(call.kind), e.what()));
  }
}

}  // namespace meshsim
