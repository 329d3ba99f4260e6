#include "traces/kineto_ops.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace meshsim {
namespace {

using nlohmann::json;
using Dims = std::vector<std::int64_t>;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains_any(const std::string& text, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const char* w) { return text.find(w) != std::string::npos; });
}

// Larger than any tensor dimension a GPU kernel runs (2^31): such dims are not read, so that the
// shapes built from them cannot overflow.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;
// Larger than any message a collective sends (2^50 elements).
constexpr std::int64_t kMaxMessage = std::int64_t{1} << 50;

// args["Input Dims"]: one list of sizes in [0, kMaxDim] per input ([] for a scalar or a
// non-tensor); none at all when any size is out of that range.
std::vector<Dims> input_dims(const KinetoCpuOp& op) {
  std::vector<Dims> out;
  const auto it = op.args.find("Input Dims");
  if (it == op.args.end() || !it->is_array()) return out;
  for (const auto& d : *it) {
    Dims dims;
    if (d.is_array()) {
      for (const auto& x : d) {
        if (!x.is_number_integer() || x.get<std::int64_t>() < 0 ||
            x.get<std::int64_t>() > kMaxDim) {
          return {};
        }
        dims.push_back(x.get<std::int64_t>());
      }
    }
    out.push_back(std::move(dims));
  }
  return out;
}

std::string arg_string(const json& args, const char* key, std::size_t index) {
  const auto it = args.find(key);
  if (it == args.end() || !it->is_array() || index >= it->size()) return "";
  const json& v = (*it)[index];
  return v.is_string() ? v.get<std::string>() : "";
}

std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (const auto x : d) {
    if (x != 0 && n > (std::int64_t{1} << 62) / x) return std::int64_t{1} << 62;
    n *= x;
  }
  return n;
}

// The innermost operator of the kernel's stack that `accept` takes.
const KinetoCpuOp* innermost(const KinetoTrace& trace, const KinetoKernel& kernel,
                             const std::function<bool(const KinetoCpuOp&)>& accept) {
  for (auto it = kernel.stack.rbegin(); it != kernel.stack.rend(); ++it) {
    const KinetoCpuOp& op = trace.cpu_ops[*it];
    if (accept(op)) return &op;
  }
  return nullptr;
}

bool has_dims(const KinetoCpuOp& op) {
  const auto d = input_dims(op);
  return std::any_of(d.begin(), d.end(), [](const Dims& x) { return !x.empty(); });
}

DType dtype_of(const KinetoCpuOp& op, std::size_t input) {
  return parse_torch_dtype(arg_string(op.args, "Input type", input)).value_or(DType::bf16);
}

// GEMM operators: (index of A, index of B) in the operator's inputs.
std::optional<std::pair<std::size_t, std::size_t>> gemm_operands(const std::string& name) {
  if (name == "aten::mm" || name == "aten::bmm") return std::pair<std::size_t, std::size_t>{0, 1};
  if (name == "aten::addmm" || name == "aten::baddbmm")
    return std::pair<std::size_t, std::size_t>{1, 2};
  return std::nullopt;
}

void match_gemm(const KinetoTrace& trace, const KinetoKernel& kernel, KinetoMatch& m) {
  const KinetoCpuOp* op = innermost(trace, kernel, [](const KinetoCpuOp& o) {
    return gemm_operands(o.name).has_value() && has_dims(o);
  });
  if (op == nullptr) {
    m.unmatched = "no aten::mm/addmm/bmm/baddbmm operator with Input Dims launched it";
    return;
  }
  const auto [ia, ib] = *gemm_operands(op->name);
  const auto dims = input_dims(*op);
  if (dims.size() <= ib || dims[ia].size() != dims[ib].size() || dims[ia].size() < 2 ||
      dims[ia].size() > 3) {
    m.unmatched = fmt::format("{}: Input Dims are not a matrix product", op->name);
    return;
  }
  const Dims& a = dims[ia];
  const Dims& b = dims[ib];
  const std::int64_t batch = a.size() == 3 ? a[0] : 1;
  GemmShape g;
  g.m = batch * a[a.size() - 2];
  g.k = a.back();
  g.n = b.back();
  m.op = op->name;
  m.call = KernelCall{KernelKind::gemm, dtype_of(*op, ia), g, {}, {}, ElementwiseFn::none};
}

struct AttentionOp {
  const char* name;
  bool backward;
  std::size_t query;   // input index of the query
  std::size_t causal;  // input index of is_causal in ATen's signature
  bool heads_first;    // [b, h, s, d] (true) or [b, s, h, d]
};

constexpr std::array<AttentionOp, 8> kAttentionOps = {{
    {"aten::_flash_attention_forward", false, 0, 8, false},
    {"aten::_flash_attention_backward", true, 1, 11, false},
    {"aten::_scaled_dot_product_flash_attention", false, 0, 4, true},
    {"aten::_scaled_dot_product_flash_attention_backward", true, 1, 11, true},
    {"aten::_scaled_dot_product_efficient_attention", false, 0, 6, true},
    {"aten::_scaled_dot_product_efficient_attention_backward", true, 1, 11, true},
    {"aten::_scaled_dot_product_cudnn_attention", false, 0, 6, true},
    {"aten::_scaled_dot_product_cudnn_attention_backward", true, 1, 14, true},
}};

const AttentionOp* attention_op(const std::string& name) {
  for (const auto& a : kAttentionOps) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

void match_attention(const KinetoTrace& trace, const KinetoKernel& kernel, KinetoMatch& m) {
  const KinetoCpuOp* op = innermost(trace, kernel, [](const KinetoCpuOp& o) {
    return attention_op(o.name) != nullptr && has_dims(o);
  });
  if (op == nullptr) {
    m.unmatched = "no flash/efficient/cudnn attention operator with Input Dims launched it";
    return;
  }
  const AttentionOp& a = *attention_op(op->name);
  const auto dims = input_dims(*op);
  if (dims.size() <= a.query + 1 || dims[a.query].size() != 4 || dims[a.query + 1].size() != 4) {
    m.unmatched = fmt::format("{}: query and key are not 4-d", op->name);
    return;
  }
  const Dims& q = dims[a.query];
  const Dims& k = dims[a.query + 1];
  const std::size_t h = a.heads_first ? 1 : 2, s = a.heads_first ? 2 : 1;
  AttentionShape shape;
  shape.batch = q[0];
  shape.heads_q = q[h];
  shape.heads_kv = k[h];
  shape.head_dim = q[3];
  shape.mask = arg_string(op->args, "Concrete Inputs", a.causal) == "True" ? MaskMode::causal
                                                                           : MaskMode::none;
  shape.q = {{0, q[s]}};
  shape.k = {{0, k[s]}};
  m.op = op->name;
  m.call = KernelCall{a.backward ? KernelKind::attention_bwd : KernelKind::attention_fwd,
                      dtype_of(*op, a.query),
                      shape,
                      {},
                      {},
                      ElementwiseFn::none};
}

void match_memory(const KinetoTrace& trace, const KinetoKernel& kernel, KinetoMatch& m) {
  const KinetoCpuOp* op = innermost(trace, kernel, has_dims);
  if (op == nullptr) {
    m.unmatched = "no operator with Input Dims launched it";
    return;
  }
  if (gemm_operands(op->name) || attention_op(op->name) != nullptr) {
    m.category = KinetoCategory::other;
    m.unmatched =
        fmt::format("a helper kernel of {} (timed with it: not a memory sample)", op->name);
    return;
  }
  const auto dims = input_dims(*op);
  std::int64_t elements = 0;
  std::size_t largest = 0;
  std::int32_t tensors = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].empty()) continue;
    ++tensors;
    if (numel(dims[i]) > elements) {
      elements = numel(dims[i]);
      largest = i;
    }
  }
  const bool copy = op->name == "aten::copy_" || op->name == "aten::_to_copy" ||
                    op->name == "aten::clone" || op->name == "aten::contiguous";
  const bool fill = op->name == "aten::fill_" || op->name == "aten::zero_";
  VectorShape v;
  v.elements = elements;
  v.operands = copy ? 2 : fill ? 1 : std::min(tensors + 1, kMaxVectorOperands);
  m.op = op->name;
  m.call = KernelCall{copy ? KernelKind::copy : KernelKind::elementwise,
                      dtype_of(*op, largest),
                      v,
                      {},
                      {},
                      ElementwiseFn::none};
}

std::optional<std::pair<bool, CollectiveKind>> collective_kind(std::string name) {
  name = lower(name);
  name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
  using P = std::pair<bool, CollectiveKind>;
  if (name.starts_with("allreduce")) return P{false, CollectiveKind::all_reduce};
  if (name.starts_with("allgather")) return P{false, CollectiveKind::all_gather};
  if (name.starts_with("reducescatter")) return P{false, CollectiveKind::reduce_scatter};
  if (name.starts_with("alltoall")) return P{false, CollectiveKind::all_to_all};
  if (name.starts_with("broadcast")) return P{false, CollectiveKind::broadcast};
  if (name == "send" || name == "recv") return P{true, CollectiveKind::permute};
  return std::nullopt;
}

std::int64_t arg_int(const json& args, const char* key) {
  const auto it = args.find(key);
  return it != args.end() && it->is_number_integer() ? it->get<std::int64_t>() : -1;
}

void match_collective(const KinetoTrace& trace, const KinetoKernel& kernel, KinetoMatch& m) {
  const KinetoCpuOp* op = innermost(
      trace, kernel, [](const KinetoCpuOp& o) { return o.args.contains("Collective name"); });
  if (op == nullptr) {
    m.unmatched = "no record_param_comms operator (Collective name) launched it";
    return;
  }
  const auto name = op->args["Collective name"];
  const auto kind = name.is_string() ? collective_kind(name.get<std::string>()) : std::nullopt;
  const std::int64_t in = arg_int(op->args, "In msg nelems");
  const std::int64_t out = arg_int(op->args, "Out msg nelems");
  const std::int64_t group = arg_int(op->args, "Group size");
  const auto type = op->args.find("dtype");
  const std::string type_name =
      type != op->args.end() && type->is_string() ? type->get<std::string>() : "";
  const DType dtype = parse_torch_dtype(type_name).value_or(DType::bf16);
  if (!kind || in < 0 || out < 0 || in > kMaxMessage || out > kMaxMessage || group < 1 ||
      !parse_torch_dtype(type_name)) {
    m.unmatched = fmt::format(
        "{}: collective name, message sizes, group size or dtype missing "
        "or not understood",
        op->name);
    return;
  }
  KinetoCollective c;
  c.p2p = kind->first;
  c.kind = kind->second;
  c.dtype = dtype;
  c.group_size = static_cast<int>(std::min<std::int64_t>(group, 1 << 30));
  const std::int64_t elements = c.kind == CollectiveKind::all_gather ? out : in;
  c.bytes = elements * static_cast<std::int64_t>(dtype_bytes(dtype));
  m.op = op->name;
  m.collective = c;
}

}  // namespace

std::string_view to_string(KinetoCategory c) {
  constexpr std::array<std::string_view, 5> names = {"gemm", "attention", "memory", "communication",
                                                     "other"};
  return names[static_cast<std::size_t>(c)];
}

std::optional<DType> parse_torch_dtype(std::string_view name) {
  std::string n = lower(name);
  if (n.starts_with("c10::")) n = n.substr(5);
  if (n == "bfloat16") return DType::bf16;
  if (n == "half" || n == "float16") return DType::fp16;
  if (n == "float" || n == "float32") return DType::fp32;
  if (n == "double" || n == "float64") return DType::fp64;
  return std::nullopt;
}

KinetoMatch match_kineto_kernel(const KinetoTrace& trace, const KinetoKernel& kernel) {
  KinetoMatch m;
  const std::string name = lower(kernel.name);
  if (name.starts_with("nccl")) {
    m.category = KinetoCategory::communication;
    match_collective(trace, kernel, m);
  } else if (contains_any(name, {"flash", "fmha"})) {
    m.category = KinetoCategory::attention;
    match_attention(trace, kernel, m);
  } else if (contains_any(name, {"gemm", "cutlass", "xmma", "nvjet", "cublas"})) {
    m.category = KinetoCategory::gemm;
    match_gemm(trace, kernel, m);
  } else if (kernel.category != "kernel" && kernel.category != "Kernel") {
    m.category = KinetoCategory::memory;
    match_memory(trace, kernel, m);
  } else if (contains_any(name, {"elementwise", "reduce", "copy", "norm", "softmax", "fill",
                                 "dropout", "cat_", "index", "memset", "memcpy"})) {
    m.category = KinetoCategory::memory;
    match_memory(trace, kernel, m);
  } else {
    m.unmatched = "kernel name not recognized";
  }
  return m;
}

}  // namespace meshsim
