#pragma once
// What a profiled GPU kernel is in meshsim's terms: its op kind (a KernelCall with the shape its
// launching PyTorch operator recorded, or a collective with its size) and a category for
// summaries. Matching is by the kernel's name first (which library ran it), then by the innermost
// enclosing operator that carries shapes:
//   gemm       kernel name with gemm, cutlass, xmma, nvjet or cublas; operator aten::mm
//   [m,k]x[k,n],
//              aten::addmm (bias, [m,k], [k,n]), aten::bmm / aten::baddbmm [b,m,k]x[b,k,n] (as
//              one GEMM of b*m rows: the same FLOPs);
//   attention  kernel name with flash or fmha; operator aten::_flash_attention_forward /
//              _backward ([b, s, h, d] layout) or aten::_scaled_dot_product_flash_attention /
//              _efficient_attention / _cudnn_attention and their _backward ([b, h, s, d]), the
//              causal flag from "Concrete Inputs" (the is_causal argument);
//   memory     elementwise, reduce, copy, norm, softmax, memset/memcpy kernels: elements of the
//              operator's largest input; operands = its tensor inputs + 1 output; aten::copy_,
//              aten::_to_copy, aten::clone and aten::contiguous are copies;
//   communication  nccl* kernels: the enclosing record_param_comms operator's "Collective name",
//              message size and "Group size" (bytes as meshsim's CollectiveCall counts them:
//              all-gather the gathered output, reduce-scatter and all-to-all the input, else the
//              per-rank buffer).
// Anything else, or a kernel whose operator recorded no shapes, is `other` with the reason.
#include <optional>
#include <string>

#include "sim/kernel_call.hpp"
#include "sim/program.hpp"
#include "traces/kineto_trace.hpp"

namespace meshsim {

enum class KinetoCategory { gemm, attention, memory, communication, other };
std::string_view to_string(KinetoCategory c);

struct KinetoCollective {
  bool p2p = false;  // send/recv: `bytes` one way
  CollectiveKind kind = CollectiveKind::all_reduce;
  std::int64_t bytes = 0;
  int group_size = 1;
  DType dtype = DType::bf16;
};

struct KinetoMatch {
  KinetoCategory category = KinetoCategory::other;
  std::optional<KernelCall> call;              // gemm, attention, memory
  std::optional<KinetoCollective> collective;  // communication
  std::string op;                              // the operator the shapes came from
  std::string unmatched;                       // why no call/collective could be built
};

KinetoMatch match_kineto_kernel(const KinetoTrace& trace, const KinetoKernel& kernel);

// "c10::BFloat16", "BFloat16", "float", "c10::Half", "double" -> the dtype; nullopt otherwise.
std::optional<DType> parse_torch_dtype(std::string_view name);

}  // namespace meshsim
