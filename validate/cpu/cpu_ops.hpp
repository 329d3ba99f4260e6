#pragma once
// The CPU kernel runner's per-kind steps: each turns one KernelCall on a rank's slots into
// kernels/cpu calls (operand order as documented in sim/kernel_call.hpp and by the builders).
// Shapes are checked against the slots; a mismatch is a builder bug (InvariantError).
#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/kernel_call.hpp"
#include "validate/cpu/cpu_kernel_runner.hpp"
#include "validate/cpu/cpu_slot_views.hpp"

namespace meshsim::cpu_ops {

// InjectedFault::gemm_scale: every GEMM result (forward and gradients) is this much too large.
inline constexpr double kFaultyGemmAlpha = 1.1;

// The call has exactly this many input and output slots (InvariantError otherwise).
inline void expect_operands(const KernelCall& call, std::size_t inputs, std::size_t outputs) {
  MESHSIM_CHECK(
      call.inputs.size() == inputs && call.outputs.size() == outputs,
      fmt::format("{} with {} takes {} inputs and {} outputs, got {} and {}", to_string(call.kind),
                  to_string(call.fn), inputs, outputs, call.inputs.size(), call.outputs.size()));
}

// Attention (cpu_attention_ops.cpp): blocks, merges, row-block accumulates.
void attention_forward(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void attention_backward(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void lse_merge(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void row_accumulate(const SlotViews& v, const KernelCall& call);

// Dense (cpu_dense_ops.cpp): GEMM without activation, vector accumulate, copy, bias add/grad.
void gemm(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void accumulate(const SlotViews& v, const KernelCall& call);
void copy(const SlotViews& v, const KernelCall& call);
void bias(const SlotViews& v, const KernelCall& call);

// MLP layers (cpu_mlp_ops.cpp): GEMM with a relu/gelu epilogue, linear_bwd (with the activation's
// derivative), activation elementwise, loss, optimizer update.
void gemm_activation(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void linear_backward(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void activation(const SlotViews& v, const KernelCall& call);
void loss(const SlotViews& v, const KernelCall& call);
void optimizer_update(const SlotViews& v, const KernelCall& call);

}  // namespace meshsim::cpu_ops
