#include "validate/cpu/shape_kernels.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/loss.hpp"
#include "kernels/cpu/optimizer.hpp"
#include "kernels/cpu/vector_ops.hpp"
#include "sim/error.hpp"
#include "validate/run/activation_of.hpp"

namespace meshsim {
namespace {

namespace kc = kernels::cpu;

// Operand buffers of one thread: operand i is a zero-filled region of at least the asked bytes.
// Buffers only grow, so a sequence of same-shaped calls allocates once.
class ScratchOperands {
 public:
  std::size_t capacity() const {
    std::size_t bytes = 0;
    for (const auto& b : buffers_) bytes += b.size();
    return bytes;
  }
  void* get(std::size_t index, std::int64_t bytes) {
    if (buffers_.size() <= index) buffers_.resize(index + 1);
    auto& b = buffers_[index];
    const auto need = static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1));
    if (b.size() < need) b.assign(need, std::byte{0});
    return b.data();
  }

 private:
  std::vector<std::vector<std::byte>> buffers_;
};

// Scratch sets outlive the threads that grew them: the executor starts a thread per stream for
// every run, and a set freed with its thread would be allocated and zero-filled again (its
// pages faulted in) by the first kernel of the next run. Measured with `meshsim validate program
// --compare` on a 2-rank training step: the step's first kernel ('zero grad buffer', 1.0 ms
// predicted) took 26-54 ms and the optimizer step 54 ms against 30 ms, in every timed run. A GPU
// framework allocates its buffers once (the caching allocator), as this pool does now.
class ScratchPool {
 public:
  // The largest free set: a compute stream's thread, whose kernels grew the largest buffers,
  // asks first when a run starts (communication threads rarely ask at all).
  std::unique_ptr<ScratchOperands> take() {
    const std::lock_guard lock(mu_);
    if (free_.empty()) return std::make_unique<ScratchOperands>();
    auto largest = std::max_element(free_.begin(), free_.end(), [](const auto& a, const auto& b) {
      return a->capacity() < b->capacity();
    });
    auto s = std::move(*largest);
    free_.erase(largest);
    return s;
  }
  void give(std::unique_ptr<ScratchOperands> s) {
    const std::lock_guard lock(mu_);
    free_.push_back(std::move(s));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<ScratchOperands>> free_;
};

ScratchPool& scratch_pool() {
  static ScratchPool* pool = new ScratchPool;  // reachable to the end: threads return sets late
  return *pool;
}

struct ThreadScratch {
  std::unique_ptr<ScratchOperands> set = scratch_pool().take();
  ThreadScratch() = default;
  ThreadScratch(const ThreadScratch&) = delete;
  ThreadScratch& operator=(const ThreadScratch&) = delete;
  ~ThreadScratch() { scratch_pool().give(std::move(set)); }
};

ScratchOperands& scratch() {
  thread_local ThreadScratch s;
  return *s.set;
}

kernels::ScalarType scalar_of(DType d) {
  return static_cast<kernels::ScalarType>(d);
}

std::int64_t bytes_of(DType d, std::int64_t elements) {
  return elements * dtype_bytes(d);
}

kernels::VectorView vec(std::size_t index, DType d, std::int64_t n) {
  return kernels::vector_view(scratch().get(index, bytes_of(d, n)), scalar_of(d), n);
}

kernels::MatrixView mat(std::size_t index, DType d, std::int64_t rows, std::int64_t cols) {
  return kernels::matrix_view(scratch().get(index, bytes_of(d, rows * cols)), scalar_of(d), rows,
                              cols);
}

bool has_activation(ElementwiseFn fn) {
  return fn == ElementwiseFn::relu || fn == ElementwiseFn::gelu;
}

void run_gemm(const KernelCall& call) {
  const auto& g = std::get<GemmShape>(call.shape);
  const auto a = g.trans_a ? mat(0, call.dtype, g.k, g.m) : mat(0, call.dtype, g.m, g.k);
  const auto b = g.trans_b ? mat(1, call.dtype, g.n, g.k) : mat(1, call.dtype, g.k, g.n);
  const auto c = mat(2, call.dtype, g.m, g.n);
  kc::gemm(a, g.trans_a ? kc::Transpose::yes : kc::Transpose::no, b,
           g.trans_b ? kc::Transpose::yes : kc::Transpose::no, c, 1.0, g.accumulate ? 1.0 : 0.0);
  if (has_activation(call.fn)) {
    // The fused epilogue: y = f(pre) forward; dh = f'(pre) * dy for the input gradient.
    const auto y = kernels::as_vector(mat(3, call.dtype, g.m, g.n));
    if (g.trans_b) {
      kc::activation_backward(activation_of(call.fn), kernels::as_vector(c), y, y);
    } else {
      kc::activation_forward(activation_of(call.fn), kernels::as_vector(c), y);
    }
  }
}

void run_linear_bwd(const KernelCall& call) {
  const auto& g = std::get<GemmShape>(call.shape);
  const auto dy = mat(2, call.dtype, g.m, g.n);
  if (has_activation(call.fn)) {
    const auto pre = mat(5, call.dtype, g.m, g.n);
    kc::activation_backward(activation_of(call.fn), kernels::as_vector(pre), kernels::as_vector(dy),
                            kernels::as_vector(dy));
  }
  kc::linear_backward(mat(0, call.dtype, g.m, g.k), mat(1, call.dtype, g.k, g.n), dy,
                      mat(3, call.dtype, g.m, g.k), mat(4, call.dtype, g.k, g.n),
                      kc::WeightLayout::in_out);
}

std::int64_t range_tokens(const std::vector<TokenRange>& ranges) {
  std::int64_t n = 0;
  for (const auto& r : ranges) n += r.size();
  return n;
}

// Rows 0.. of a buffer holding the ranges' positions in order.
std::vector<kernels::RowSpan> rows_of(const std::vector<TokenRange>& ranges) {
  std::vector<kernels::RowSpan> rows;
  std::int64_t row = 0;
  for (const auto& r : ranges) {
    rows.push_back({row, r.begin, r.size()});
    row += r.size();
  }
  return rows;
}

struct AttentionOperands {
  kc::AttentionBlock block;
  kernels::HeadsView q, k, v, out;
  kernels::LseView lse;
};

// q [b, tq, hq, d], k and v [b, tk, hkv, d] in the call's dtype; out and lse fp32 (the ring
// builders' accumulators).
AttentionOperands attention_operands(const KernelCall& call) {
  const auto& s = std::get<AttentionShape>(call.shape);
  const std::int64_t tq = range_tokens(s.q), tk = range_tokens(s.k);
  AttentionOperands o;
  o.block.mask = s.mask == MaskMode::causal ? kernels::Mask::causal : kernels::Mask::none;
  o.block.q = rows_of(s.q);
  o.block.k = rows_of(s.k);
  auto heads = [&](std::size_t i, DType d, std::int64_t tokens, std::int64_t h) {
    return kernels::heads_view(scratch().get(i, bytes_of(d, s.batch * tokens * h * s.head_dim)),
                               scalar_of(d), s.batch, tokens, h, s.head_dim);
  };
  o.q = heads(0, call.dtype, tq, s.heads_q);
  o.k = heads(1, call.dtype, tk, s.heads_kv);
  o.v = heads(2, call.dtype, tk, s.heads_kv);
  o.out = heads(3, DType::fp32, tq, s.heads_q);
  o.lse = kernels::lse_view(scratch().get(4, bytes_of(DType::fp32, s.batch * s.heads_q * tq)),
                            kernels::ScalarType::fp32, s.batch, s.heads_q, tq);
  return o;
}

void run_attention(const KernelCall& call) {
  const auto o = attention_operands(call);
  if (call.kind == KernelKind::attention_fwd) {
    kc::attention_forward(o.block, o.q, o.k, o.v, o.out, o.lse);
    return;
  }
  const auto& s = std::get<AttentionShape>(call.shape);
  auto like = [&](std::size_t i, const kernels::HeadsView& h) {
    return kernels::heads_view(
        scratch().get(i, bytes_of(DType::fp32, s.batch * h.tokens * h.heads * s.head_dim)),
        kernels::ScalarType::fp32, s.batch, h.tokens, h.heads, s.head_dim);
  };
  kc::attention_backward(o.block, o.q, o.k, o.v, o.out, like(5, o.out), o.lse, like(6, o.q),
                         like(7, o.k), like(8, o.v), kc::Store::accumulate);
}

void run_lse_merge(const KernelCall& call) {
  const auto& s = std::get<AttentionShape>(call.shape);
  const std::int64_t tq = range_tokens(s.q);
  auto heads = [&](std::size_t i) {
    return kernels::heads_view(
        scratch().get(i, bytes_of(DType::fp32, s.batch * tq * s.heads_q * s.head_dim)),
        kernels::ScalarType::fp32, s.batch, tq, s.heads_q, s.head_dim);
  };
  auto lse = [&](std::size_t i) {
    return kernels::lse_view(scratch().get(i, bytes_of(DType::fp32, s.batch * s.heads_q * tq)),
                             kernels::ScalarType::fp32, s.batch, s.heads_q, tq);
  };
  const auto rows = rows_of(s.q);
  kc::lse_merge(rows, heads(0), lse(1), heads(2), lse(3));
}

// Elements a vector-like call streams over: VectorShape's, or the rows x heads x head_dim of an
// attention row-block accumulate.
std::int64_t vector_elements(const KernelCall& call) {
  if (const auto* v = std::get_if<VectorShape>(&call.shape)) return v->elements;
  const auto& s = std::get<AttentionShape>(call.shape);
  return s.batch * range_tokens(s.q) * s.heads_q * s.head_dim;
}

// An element-wise kernel without a function moves the `operands` passes over n elements that the
// cost model charges (sim/kernel_call.cpp kernel_bytes: operands x n x dtype bytes): one pass is
// a fill (zeroing a gradient buffer; the gradient norm's read), two a copy, three an accumulate
// (bias add, residual add); more are split into accumulates (3 passes each) while the rest is not
// 4, then copies (2 each): 4 = two copies, 5 = an accumulate and a copy, 7 = one and two copies.
void run_passes(std::int32_t operands, DType d, std::int64_t n) {
  for (std::int32_t left = std::max<std::int32_t>(operands, 1); left > 0;) {
    if (left >= 3 && left != 4) {
      kc::accumulate(vec(0, d, n), vec(1, d, n));
      left -= 3;
    } else if (left >= 2) {
      kc::copy(vec(0, d, n), vec(1, d, n));
      left -= 2;
    } else {
      kc::fill(vec(0, d, n), 0.0);
      left -= 1;
    }
  }
}

void run_vector(const KernelCall& call) {
  const std::int64_t n = vector_elements(call);
  const DType d = call.dtype;
  switch (call.kind) {
    case KernelKind::accumulate:
      kc::accumulate(vec(0, d, n), vec(1, d, n));
      return;
    case KernelKind::copy:
      kc::copy(vec(0, d, n), vec(1, d, n));
      return;
    case KernelKind::elementwise:
      if (has_activation(call.fn)) {
        kc::activation_forward(activation_of(call.fn), vec(0, d, n), vec(1, d, n));
      } else {
        run_passes(std::get<VectorShape>(call.shape).operands, d, n);
      }
      return;
    case KernelKind::loss:
      kc::dot_loss(vec(0, d, n), vec(1, d, n), vec(2, d, n));
      return;
    case KernelKind::optimizer_update:
      // Adam on fp32 moments and master weights beside the parameter shard.
      kc::adam_update(
          kc::AdamConfig{}, 1, vec(0, d, n), vec(1, d, n), vec(2, DType::fp32, n),
          vec(3, DType::fp32, n),
          d == DType::fp32 || d == DType::fp64 ? kernels::VectorView{} : vec(4, DType::fp32, n));
      return;
    default:
      MESHSIM_CHECK(false, fmt::format("{} is not a vector kernel", to_string(call.kind)));
  }
}

}  // namespace

bool runs_on_scratch(const KernelCall& call) {
  return call.inputs.empty() && call.outputs.empty();
}

void run_kernel_on_scratch(const KernelCall& call) {
  switch (call.kind) {
    case KernelKind::gemm:
      run_gemm(call);
      return;
    case KernelKind::linear_bwd:
      run_linear_bwd(call);
      return;
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd:
      run_attention(call);
      return;
    case KernelKind::lse_merge:
      run_lse_merge(call);
      return;
    case KernelKind::accumulate:
    case KernelKind::copy:
    case KernelKind::elementwise:
    case KernelKind::loss:
    case KernelKind::optimizer_update:
      run_vector(call);
      return;
  }
}

ShapeKernelRunner::ShapeKernelRunner(std::unique_ptr<KernelRunner> slots)
    : slots_(std::move(slots)) {
  // Ranks and streams share the machine's cores: one BLAS thread per call.
  kc::set_blas_threads(1);
}

void ShapeKernelRunner::run(const Op& op, const KernelCall& call) {
  if (runs_on_scratch(call)) {
    run_kernel_on_scratch(call);
    return;
  }
  MESHSIM_CHECK(
      slots_ != nullptr,
      fmt::format("op '{}' names tensor slots but this runner has only scratch operands", op.name));
  slots_->run(op, call);
}

}  // namespace meshsim
