#pragma once
// The CPU kernel runner's per-kind steps: each binds one KernelCall's operands on a rank's slots
// (validate/run/kernel_operands: shapes checked, a mismatch is a builder bug) and calls
// kernels/cpu on them.
#include "sim/kernel_call.hpp"
#include "validate/run/kernel_operands.hpp"
#include "validate/run/slot_views.hpp"

namespace meshsim::cpu_ops {

// Attention: blocks, merges (ring attention).
void attention_forward(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void attention_backward(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void lse_merge(const SlotViews& v, const KernelCall& call, InjectedFault fault);

// Dense: GEMM without activation, accumulate (vector or row blocks), copy, bias add/grad.
void gemm(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void accumulate(const SlotViews& v, const KernelCall& call);
void copy(const SlotViews& v, const KernelCall& call);
void bias(const SlotViews& v, const KernelCall& call);

// MLP layers: GEMM with a relu/gelu epilogue, linear_bwd (with the activation's derivative),
// activation elementwise; loss and optimizer update (no builder emits them yet: InvariantError).
void gemm_activation(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void linear_backward(const SlotViews& v, const KernelCall& call, InjectedFault fault);
void activation(const SlotViews& v, const KernelCall& call);
void loss(const SlotViews& v, const KernelCall& call);
void optimizer_update(const SlotViews& v, const KernelCall& call);

}  // namespace meshsim::cpu_ops
