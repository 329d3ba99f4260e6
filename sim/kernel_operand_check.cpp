#include "sim/kernel_operand_check.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/size_math.hpp"

namespace meshsim {
namespace {

// One op's operands under check; every failure names the op and, where one is at fault, the slot.
class OperandCheck {
 public:
  OperandCheck(const Program& p, const Op& op, const KernelCall& call, std::string_view origin)
      : p_(p), op_(op), call_(call), origin_(origin) {}

  void run() const;

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: ops[{}] '{}': {} {}", origin_, op_.id, op_.name,
                                 to_string(call_.kind), what));
  }
  void counts(std::size_t inputs, std::size_t outputs, bool at_least = false) const {
    const bool ok = (at_least ? call_.inputs.size() >= inputs : call_.inputs.size() == inputs) &&
                    call_.outputs.size() == outputs;
    if (!ok) {
      fail(fmt::format("takes {}{} input slots and {} output slots, got {} and {}",
                       at_least ? "at least " : "", inputs, outputs, call_.inputs.size(),
                       call_.outputs.size()));
    }
  }
  // The slot, or null for -1 and ids that do not exist.
  const TensorSlot* slot(SlotId id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= p_.slots.size()) return nullptr;
    return &p_.slots[static_cast<std::size_t>(id)];
  }
  [[noreturn]] void fail_slot(const TensorSlot& s, std::string_view expected) const {
    fail(fmt::format("expects slot {} '{}' to be {}, its shape is [{}]", s.id, s.name, expected,
                     fmt::join(s.shape, ", ")));
  }
  std::int64_t elements(const TensorSlot& s) const {
    std::int64_t n = 1;
    for (std::int64_t d : s.shape) {
      const auto next = checked_product({n, d});
      if (!next) fail_slot(s, "at most 2^63 elements");
      n = *next;
    }
    return n;
  }
  void matrix(SlotId id, std::int64_t rows, std::int64_t cols) const {
    const TensorSlot* s = slot(id);
    const auto want = checked_product({rows, cols});
    if (s != nullptr && (!want || elements(*s) != *want)) {
      fail_slot(*s, fmt::format("a [{}, {}] matrix", rows, cols));
    }
  }
  void at_least(SlotId id, std::int64_t n) const {
    const TensorSlot* s = slot(id);
    if (s != nullptr && elements(*s) < n) fail_slot(*s, fmt::format("at least {} elements", n));
  }
  void exactly(SlotId id, std::int64_t n) const {
    const TensorSlot* s = slot(id);
    if (s != nullptr && elements(*s) != n) fail_slot(*s, fmt::format("{} elements", n));
  }
  void heads(SlotId id, std::int64_t heads) const {
    const TensorSlot* s = slot(id);
    if (s != nullptr && (s->shape.size() != 4 || s->shape[2] != heads)) {
      fail_slot(*s, fmt::format("[batch, tokens, {}, head_dim]", heads));
    }
  }
  void lse(SlotId id) const {
    const TensorSlot* s = slot(id);
    if (s != nullptr && s->shape.size() != 3) fail_slot(*s, "[batch, heads, tokens]");
  }
  void kv(SlotId id) const {
    const TensorSlot* s = slot(id);
    if (s == nullptr) return;
    const std::size_t o = s->shape.size() == 6 ? 1 : 0;
    if ((s->shape.size() != 5 && s->shape.size() != 6) || s->shape[o] != 2) {
      fail_slot(*s, "a packed K/V buffer [2, batch, tokens, heads, head_dim] (with parts first)");
    }
  }
  void same_as_input(std::size_t output, std::size_t input) const {
    if (call_.outputs[output] != call_.inputs[input]) {
      fail(fmt::format("writes into its input {} (output {} must be slot {}, got {})", input,
                       output, call_.inputs[input], call_.outputs[output]));
    }
  }
  void gemm(const GemmShape& g) const;
  void attention(const AttentionShape& a) const;
  void vector(std::int64_t n) const;

  const Program& p_;
  const Op& op_;
  const KernelCall& call_;
  std::string_view origin_;
};

void OperandCheck::gemm(const GemmShape& g) const {
  const auto& in = call_.inputs;
  const auto& out = call_.outputs;
  const bool activation = call_.fn == ElementwiseFn::relu || call_.fn == ElementwiseFn::gelu;
  if (call_.fn != ElementwiseFn::none && !activation) fail("fuses relu or gelu only");
  if (call_.kind == KernelKind::linear_bwd) {  // {x, w, dy[, pre]} -> {dx, dw}
    counts(activation ? 4 : 3, 2);
    matrix(in[0], g.m, g.k), matrix(in[1], g.k, g.n), matrix(in[2], g.m, g.n);
    if (activation) matrix(in[3], g.m, g.n);
    return matrix(out[0], g.m, g.k), matrix(out[1], g.k, g.n);
  }
  if (!activation) {  // {a, b, ...} -> {c}
    counts(2, 1, true);
    matrix(in[0], g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k);
    matrix(in[1], g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n);
    return matrix(out[0], g.m, g.n);
  }
  if (!g.trans_b) {  // {x, w} -> {y, pre}
    counts(2, 2);
    matrix(in[0], g.m, g.k), matrix(in[1], g.k, g.n);
    return matrix(out[0], g.m, g.n), matrix(out[1], g.m, g.n);
  }
  counts(3, 2);  // {dy, w, pre} -> {dx, dh}
  matrix(in[0], g.m, g.k), matrix(in[1], g.n, g.k), matrix(in[2], g.m, g.k);
  matrix(out[0], g.m, g.n), matrix(out[1], g.m, g.k);
}

void OperandCheck::attention(const AttentionShape& a) const {
  const auto& in = call_.inputs;
  const auto& out = call_.outputs;
  switch (call_.kind) {
    case KernelKind::attention_fwd:  // {q, kv} -> {out, lse}
      counts(2, 2);
      return heads(in[0], a.heads_q), kv(in[1]), heads(out[0], a.heads_q), lse(out[1]);
    case KernelKind::attention_bwd:  // {q, kv, out, dout, lse} -> {dq, dkv}
      counts(5, 2);
      heads(in[0], a.heads_q), kv(in[1]), heads(in[2], a.heads_q), heads(in[3], a.heads_q);
      return lse(in[4]), heads(out[0], a.heads_q), kv(out[1]);
    case KernelKind::lse_merge:  // {block out, block lse, out, lse} -> {out, lse}
      counts(4, 2);
      heads(in[0], a.heads_q), lse(in[1]), heads(in[2], a.heads_q), lse(in[3]);
      return same_as_input(0, 2), same_as_input(1, 3);
    default: {  // accumulate of row blocks: {x, y} -> {y}, x and y alike
      counts(2, 1);
      same_as_input(0, 1);
      const TensorSlot* x = slot(in[0]);
      const TensorSlot* y = slot(in[1]);
      if (x != nullptr && y != nullptr && x->shape != y->shape) {
        fail_slot(*x, fmt::format("shaped as slot {} [{}]", y->id, fmt::join(y->shape, ", ")));
      }
    }
  }
}

void OperandCheck::vector(std::int64_t n) const {
  const auto& in = call_.inputs;
  const auto& out = call_.outputs;
  switch (call_.kind) {
    case KernelKind::accumulate:  // {x, y} -> {y}
      counts(2, 1, true);
      same_as_input(0, 1);
      return at_least(in[0], n), at_least(in[1], n);
    case KernelKind::copy:  // {x} -> {y}
      counts(1, 1, true);
      return at_least(in[0], n), at_least(out[0], n);
    case KernelKind::elementwise:
      if (call_.fn == ElementwiseFn::bias_add || call_.fn == ElementwiseFn::bias_grad) {
        return counts(2, 1, true);
      }
      if (call_.fn == ElementwiseFn::none) fail("needs a function (fn)");
      counts(1, 1);  // {x} -> {y} = f(x)
      return exactly(in[0], n), exactly(out[0], n);
    default:  // loss, optimizer_update: costed, not run
      return;
  }
}

void OperandCheck::run() const {
  if (call_.inputs.empty() && call_.outputs.empty()) return;  // a cost-only call
  if (const auto* g = std::get_if<GemmShape>(&call_.shape)) return gemm(*g);
  if (const auto* a = std::get_if<AttentionShape>(&call_.shape)) return attention(*a);
  vector(std::get<VectorShape>(call_.shape).elements);
}

}  // namespace

void check_kernel_operands(const Program& program, std::string_view origin) {
  for (const Op& op : program.ops) {
    if (const auto* call = std::get_if<KernelCall>(&op.body)) {
      OperandCheck(program, op, *call, origin).run();
    }
  }
}

}  // namespace meshsim
