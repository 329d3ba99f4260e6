#include "schedules/ring_emitter.hpp"

#include <string_view>

#include <fmt/format.h>

namespace meshsim {
namespace {

// "<prefix><stem> <step>" ("recompute attn fwd step 3"): formatted and interned once per thread,
// then shared by every rank and layer that emits the same step, which would otherwise format and
// look up the same name each time.
OpName step_name(std::string_view prefix, std::string_view stem, int step) {
  struct Names {
    std::string prefix, stem;
    std::vector<OpName> by_step;
  };
  thread_local std::vector<Names> tables;  // one per (prefix, stem): a dozen
  Names* names = nullptr;
  for (Names& t : tables) {
    if (t.stem == stem && t.prefix == prefix) {
      names = &t;
      break;
    }
  }
  if (names == nullptr)
    names = &tables.emplace_back(Names{std::string(prefix), std::string(stem), {}});
  const auto at = static_cast<std::size_t>(step);
  while (names->by_step.size() <= at) {
    names->by_step.emplace_back(fmt::format("{}{} {}", prefix, stem, names->by_step.size()));
  }
  return names->by_step[at];
}

}  // namespace

RingBlock ring_block(const RingAttentionConfig& c, int r, int i) {
  const auto mine = rank_tokens(c, r);
  const auto theirs = rank_tokens(c, kv_owner(c, r, i));
  if (!c.causal) return RingBlock{true, MaskMode::none, mine, theirs};
  if (i == 0) return RingBlock{true, MaskMode::causal, mine, mine};
  if (c.variant == RingVariant::ring) {
    if (i <= r) return RingBlock{true, MaskMode::none, mine, theirs};
    return RingBlock{};
  }
  // zigzag: before the diagonal only the first chunk of the received K/V is used, after it only
  // the second chunk of the local queries.
  if (i <= r) return RingBlock{true, MaskMode::none, mine, {theirs.front()}};
  return RingBlock{true, MaskMode::none, {mine.back()}, theirs};
}

int kv_owner(const RingAttentionConfig& c, int r, int i) {
  return ((r - i) % c.cp + c.cp) % c.cp;
}

RingEmitter::RingEmitter(const RingAttentionConfig& config, int cp_index, RingEmitStyle style)
    : cfg_(config), r_(cp_index), n_(config.cp), style_(std::move(style)) {
  for (int i = 0; i < n_; ++i) blocks_.push_back(ring_block(cfg_, r_, i));
  const std::int64_t tokens = cfg_.seq / cfg_.cp;
  kv_elems_ = 2 * cfg_.batch * tokens * cfg_.kv_heads * cfg_.head_dim;
  q_elems_ = cfg_.batch * tokens * cfg_.heads * cfg_.head_dim;
  acc_ = accumulator_dtype(cfg_.dtype);
}

KernelCall RingEmitter::call(KernelKind kind, DType dtype, KernelShape shape,
                             std::vector<SlotId> in, std::vector<SlotId> out) const {
  if (!style_.tensors) {
    in.clear();
    out.clear();
  }
  return KernelCall{kind, dtype, std::move(shape), std::move(in), std::move(out)};
}

// The rows an accumulate adds: q rows of q-shaped slots, k rows of packed K/V slots.
AttentionShape RingEmitter::rows(std::vector<TokenRange> q, std::vector<TokenRange> k) const {
  return AttentionShape{cfg_.batch,     cfg_.heads,   cfg_.kv_heads, cfg_.head_dim,
                        MaskMode::none, std::move(q), std::move(k)};
}

AttentionShape RingEmitter::shape_of(const RingBlock& b) const {
  return AttentionShape{cfg_.batch, cfg_.heads, cfg_.kv_heads, cfg_.head_dim, b.mask, b.q, b.k};
}

// A packed K/V buffer holding rank `owner`'s tokens, or (count > 1) every rank's in a row.
SlotId RingEmitter::kv_slot(RingEmitHost& host, std::string name, DType dtype, int owner,
                            int count) const {
  if (!style_.tensors) return -1;
  std::vector<std::int64_t> shape{2, cfg_.batch, cfg_.seq / cfg_.cp, cfg_.kv_heads, cfg_.head_dim};
  std::vector<TokenRange> tokens;
  if (count > 1) {
    shape.insert(shape.begin(), count);
    for (int s = 0; s < count; ++s) {
      const auto part = rank_tokens(cfg_, s);
      tokens.insert(tokens.end(), part.begin(), part.end());
    }
  } else {
    tokens = rank_tokens(cfg_, owner);
  }
  return host.ring_slot(std::move(name), dtype, std::move(shape), std::move(tokens));
}

// One hop of a ring: send `send` to r+1 and receive `recv` from r-1, as a batched p2p exchange
// or as a permutation all-to-all.
OpId RingEmitter::rotation(RingEmitHost& host, OpName name, Phase phase, int step, SlotId send,
                           SlotId recv, std::int64_t bytes, DType dtype, int tag, bool as_permute,
                           std::vector<OpId> deps) const {
  OpBody body;
  if (as_permute) {
    body = CollectiveCall{CollectiveKind::permute, host.cp_group(), bytes, dtype, 1, send, recv};
  } else {
    body = P2PCall{{Transfer{host.cp_rank((r_ + 1) % n_), bytes, tag, send}},
                   {Transfer{host.cp_rank((r_ - 1 + n_) % n_), bytes, tag, recv}}};
  }
  return host.ring_comm(name, phase, step, std::move(body), std::move(deps));
}

// The K/V of every step: all in place for step 0, one all-gather for the rest, or (p2p,
// alltoall) rotations posted one step ahead by kv_ring_step. The all-gather is labelled with the
// kernels' phase.
RingEmitter::KvRing RingEmitter::start_kv_ring(RingEmitHost& host, const RingTensors& t,
                                               Phase phase, Phase label) const {
  KvRing ring;
  ring.src.assign(static_cast<std::size_t>(n_), t.kv);
  ring.arrive.assign(static_cast<std::size_t>(n_), -1);
  if (cfg_.kv_rotation == KvRotation::all_gather && n_ > 1) {
    const SlotId all = kv_slot(host, fmt::format("kv_all_{}", to_string(phase)), cfg_.dtype, 0, n_);
    const std::int64_t bytes = n_ * kv_elems_ * dtype_bytes(cfg_.dtype);
    CollectiveCall gather{
        CollectiveKind::all_gather, host.cp_group(), bytes, cfg_.dtype, 0, t.kv, all};
    const OpId ag = host.ring_comm(phase == Phase::fwd ? "kv all-gather" : style_.bwd_allgather,
                                   label, 0, std::move(gather), host.kv_producer());
    for (int i = 1; i < n_; ++i) {
      ring.src[static_cast<std::size_t>(i)] = all;
      ring.arrive[static_cast<std::size_t>(i)] = ag;
    }
  }
  return ring;
}

// At the top of step i: wait for this step's K/V, then post the rotation for step i+1 (the first
// one waits for K/V's producer; later ones follow the previous on the stream).
void RingEmitter::kv_ring_step(RingEmitHost& host, KvRing& ring, int i, Phase phase) const {
  const auto ui = static_cast<std::size_t>(i);
  if (i > 0 && (cfg_.kv_rotation != KvRotation::all_gather || i == 1))
    host.ring_wait(ring.arrive[ui]);
  if (cfg_.kv_rotation == KvRotation::all_gather || i + 1 >= n_) return;
  const SlotId next = kv_slot(host, fmt::format("kv_{}_step{}", to_string(phase), i + 1),
                              cfg_.dtype, kv_owner(cfg_, r_, i + 1), 1);
  const int tag = (phase == Phase::fwd ? 0 : n_) + i;
  const bool permute = cfg_.kv_rotation == KvRotation::all_to_all;
  ring.arrive[ui + 1] =
      rotation(host, step_name("", permute ? "kv permute step" : "kv exchange step", i), phase, i,
               ring.src[ui], next, kv_elems_ * dtype_bytes(cfg_.dtype), cfg_.dtype, tag, permute,
               i == 0 ? host.kv_producer() : std::vector<OpId>{});
  ring.src[ui + 1] = next;
}

void RingEmitter::forward(RingEmitHost& host, const RingTensors& t, Phase kernel_phase,
                          const std::string& prefix) const {
  KvRing ring = start_kv_ring(host, t, Phase::fwd, kernel_phase);
  const DType merge_dtype = style_.merge_in_storage_dtype ? cfg_.dtype : acc_;
  bool first = true;
  for (int i = 0; i < n_; ++i) {
    kv_ring_step(host, ring, i, Phase::fwd);
    const RingBlock& b = blocks_[static_cast<std::size_t>(i)];
    if (!b.computed) continue;  // K/V still pass through
    const SlotId kv_in = ring.src[static_cast<std::size_t>(i)];
    host.ring_kernel(step_name(prefix, "attn fwd step", i), kernel_phase, i,
                     call(KernelKind::attention_fwd, cfg_.dtype, shape_of(b), {t.q, kv_in},
                          first ? std::vector<SlotId>{t.out_acc, t.lse}
                                : std::vector<SlotId>{t.blk_out, t.blk_lse}));
    if (!first) {
      host.ring_kernel(step_name(prefix, "lse merge step", i), kernel_phase, i,
                       call(KernelKind::lse_merge, merge_dtype, rows(b.q, {}),
                            {t.blk_out, t.blk_lse, t.out_acc, t.lse}, {t.out_acc, t.lse}));
    }
    first = false;
  }
  host.ring_kernel(prefix + style_.out_cast, kernel_phase, -1,
                   call(KernelKind::copy, cfg_.dtype, VectorShape{q_elems_}, {t.out_acc}, {t.out}));
}

void RingEmitter::backward(RingEmitHost& host, const RingTensors& t) const {
  KvRing ring = start_kv_ring(host, t, Phase::bwd, Phase::bwd);
  const bool permute = cfg_.kv_rotation != KvRotation::p2p;  // torch rotates dK/dV by all-to-all
  const std::int64_t dkv_bytes = kv_elems_ * dtype_bytes(acc_);
  // Step 0's block gradient starts the accumulator this rank passes on; later blocks go to
  // block_dkv and are added into the accumulator received from rank r-1.
  SlotId dkv_held = kv_slot(host, "dkv_step0", acc_, r_, 1);
  OpId dkv_arrive = -1;
  for (int i = 0; i < n_; ++i) {
    kv_ring_step(host, ring, i, Phase::bwd);
    const RingBlock& b = blocks_[static_cast<std::size_t>(i)];
    OpId send_after = -1;
    // The block gradient of the K/V this step works on (its owner's tokens).
    const SlotId blk_dkv = i == 0 || !b.computed ? dkv_held
                                                 : kv_slot(host, fmt::format("block_dkv_step{}", i),
                                                           acc_, kv_owner(cfg_, r_, i), 1);
    if (b.computed) {
      send_after =
          host.ring_kernel(step_name("", "attn bwd step", i), Phase::bwd, i,
                           call(KernelKind::attention_bwd, cfg_.dtype, shape_of(b),
                                {t.q, ring.src[static_cast<std::size_t>(i)], t.out, t.dout, t.lse},
                                {t.blk_dq, blk_dkv}));
      host.ring_kernel(
          step_name("", "dq accumulate step", i), Phase::bwd, i,
          call(KernelKind::accumulate, acc_, rows(b.q, {}), {t.blk_dq, t.dq_acc}, {t.dq_acc}));
    }
    if (i > 0) {
      host.ring_wait(dkv_arrive);  // the dK/dV accumulated so far by the ranks before
      if (b.computed) {
        send_after = host.ring_kernel(
            step_name("", "dkv accumulate step", i), Phase::bwd, i,
            call(KernelKind::accumulate, acc_, rows({}, b.k), {blk_dkv, dkv_held}, {dkv_held}));
      }
    }
    if (n_ == 1) break;
    const SlotId next =
        kv_slot(host, fmt::format("dkv_step{}", i + 1), acc_, kv_owner(cfg_, r_, i + 1), 1);
    // A skipped step passes the received dK/dV on: the stream order holds its send back.
    dkv_arrive =
        rotation(host, step_name("", permute ? "dkv permute step" : "dkv exchange step", i),
                 Phase::bwd, i, dkv_held, next, dkv_bytes, acc_, 2 * n_ + i, permute,
                 send_after >= 0 ? std::vector<OpId>{send_after} : std::vector<OpId>{});
    dkv_held = next;
  }
  if (dkv_arrive >= 0) host.ring_wait(dkv_arrive);
  host.ring_kernel("dkv cast", Phase::bwd, -1,
                   call(KernelKind::copy, cfg_.dtype, VectorShape{kv_elems_}, {dkv_held}, {t.dkv}));
  host.ring_kernel("dq cast", Phase::bwd, -1,
                   call(KernelKind::copy, cfg_.dtype, VectorShape{q_elems_}, {t.dq_acc}, {t.dq}));
}

}  // namespace meshsim
