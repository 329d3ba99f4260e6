#include "schedules/ring_attention.hpp"
#include "sim/enum_names.hpp"

#include <array>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, 2> kVariantNames = {"ring", "zigzag"};
constexpr std::array<std::string_view, 3> kRotationNames = {"p2p", "allgather", "alltoall"};
constexpr std::array<std::string_view, 3> kPassNames = {"fwd", "bwd", "fwd+bwd"};
constexpr int kMaxCp = 1024;

// What rank r computes at ring step i (design §4.1).
struct Block {
  bool computed = false;
  MaskMode mask = MaskMode::none;
  std::vector<TokenRange> q;   // query rows (also the rows merged)
  std::vector<TokenRange> k;   // key positions
  bool kv_first_half = false;  // zigzag i <= r: only the first chunk of the received K/V is used
};

class RingBuilder {
 public:
  explicit RingBuilder(const RingAttentionConfig& cfg)
      : cfg_(cfg),
        n_(cfg.cp),
        tokens_(cfg.seq / cfg.cp),
        builder_(Mesh({{"cp", cfg.cp}}, cfg.gpus_per_node), cfg.single_queue, describe(cfg)) {
    compute_ = builder_.stream("compute");
    comm_ = builder_.stream("cp_comm");
    std::vector<int> ranks(static_cast<std::size_t>(n_));
    for (int r = 0; r < n_; ++r) ranks[static_cast<std::size_t>(r)] = r;
    group_ = builder_.group("cp", std::move(ranks));
    kv_elems_ = 2 * cfg.batch * tokens_ * cfg.kv_heads * cfg.head_dim;
    q_elems_ = cfg.batch * tokens_ * cfg.heads * cfg.head_dim;
    acc_ = accumulator_dtype(cfg.dtype);
  }

  Program build() && {
    for (int r = 0; r < n_; ++r) emit_rank(r);
    return std::move(builder_).finish();
  }

  static std::string describe(const RingAttentionConfig& c) {
    return fmt::format(
        "ring attention: cp={} seq={} batch={} heads={} kv_heads={} head_dim={} dtype={} "
        "variant={} rotate={} {} pass={}",
        c.cp, c.seq, c.batch, c.heads, c.kv_heads, c.head_dim, to_string(c.dtype),
        to_string(c.variant), to_string(c.rotate), c.causal ? "causal" : "non-causal",
        to_string(c.pass));
  }

 private:
  struct RankSlots {
    SlotId q, kv, out, lse, out_acc, blk_out, blk_lse;
    SlotId dout, dq, dq_acc, blk_dq, dkv;
  };

  Block block(int r, int i) const {
    const int s = ((r - i) % n_ + n_) % n_;  // whose K/V rank r holds at step i
    const auto mine = rank_tokens(cfg_, r);
    const auto theirs = rank_tokens(cfg_, s);
    Block b;
    if (!cfg_.causal) {
      b = Block{true, MaskMode::none, mine, theirs, false};
    } else if (i == 0) {
      b = Block{true, MaskMode::causal, mine, mine, false};
    } else if (cfg_.variant == RingVariant::ring) {
      if (i <= r) b = Block{true, MaskMode::none, mine, theirs, false};
    } else if (i <= r) {
      b = Block{true, MaskMode::none, mine, {theirs.front()}, true};
    } else {
      b = Block{true, MaskMode::none, {mine.back()}, theirs, false};
    }
    return b;
  }

  // The rows an accumulate adds: q rows of q-shaped slots, k rows of packed K/V slots.
  AttentionShape row_block(std::vector<TokenRange> q, std::vector<TokenRange> k) const {
    return AttentionShape{cfg_.batch,     cfg_.heads,   cfg_.kv_heads, cfg_.head_dim,
                          MaskMode::none, std::move(q), std::move(k)};
  }

  AttentionShape attention_shape(const Block& b) const {
    return AttentionShape{cfg_.batch, cfg_.heads, cfg_.kv_heads, cfg_.head_dim, b.mask, b.q, b.k};
  }

  std::vector<OpId> take_waits() {
    std::vector<OpId> w;
    w.swap(waits_);
    return w;
  }

  OpId kernel(int r, std::string name, Phase phase, int step, KernelKind kind, DType dtype,
              KernelShape shape, std::vector<SlotId> in, std::vector<SlotId> out,
              std::vector<OpId> deps) {
    KernelCall call{kind, dtype, std::move(shape), std::move(in), std::move(out)};
    return builder_.add(r, compute_, std::move(name), OpLabels{phase, -1, -1, step, -1},
                        std::move(call), std::move(deps));
  }

  // One hop of a ring: send `send` to r+1 and receive `recv` from r-1, as a batched p2p exchange
  // or as a permutation all-to-all.
  OpId rotation(int r, std::string name, Phase phase, int step, SlotId send, SlotId recv,
                std::int64_t bytes, DType dtype, int tag, bool as_permute, std::vector<OpId> deps) {
    OpBody body;
    if (as_permute) {
      body = CollectiveCall{CollectiveKind::permute, group_, bytes, dtype, 1, send, recv};
    } else {
      body = P2PCall{{Transfer{(r + 1) % n_, bytes, tag, send}},
                     {Transfer{(r - 1 + n_) % n_, bytes, tag, recv}}};
    }
    return builder_.add(r, comm_, std::move(name), OpLabels{phase, -1, -1, step, -1},
                        std::move(body), std::move(deps));
  }

  // A packed K/V buffer holding rank `owner`'s tokens, or (count > 1) every rank's in a row.
  SlotId kv_slot(int r, std::string name, DType dtype, int owner, std::int64_t count = 1) {
    std::vector<std::int64_t> shape{2, cfg_.batch, tokens_, cfg_.kv_heads, cfg_.head_dim};
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
    return builder_.slot(r, std::move(name), dtype, std::move(shape), std::move(tokens));
  }

  // Rank holding the K/V rank r works on at ring step i.
  int kv_owner(int r, int i) const { return ((r - i) % n_ + n_) % n_; }

  void emit_rank(int r) {
    const DType e = cfg_.dtype;
    const std::vector<std::int64_t> q_shape{cfg_.batch, tokens_, cfg_.heads, cfg_.head_dim};
    const std::vector<std::int64_t> lse_shape{cfg_.batch, cfg_.heads, tokens_};
    const std::vector<TokenRange> mine = rank_tokens(cfg_, r);
    auto local = [&](std::string name, DType dtype, const std::vector<std::int64_t>& shape) {
      return builder_.slot(r, std::move(name), dtype, shape, mine);
    };
    RankSlots s{};
    s.q = local("q", e, q_shape);
    s.kv = kv_slot(r, "kv", e, r);
    s.out = local("out", e, q_shape);
    s.lse = local("lse", acc_, lse_shape);
    waits_.clear();
    if (cfg_.pass != AttentionPass::bwd) {
      s.out_acc = local("out_acc", acc_, q_shape);
      s.blk_out = local("block_out", acc_, q_shape);
      s.blk_lse = local("block_lse", acc_, lse_shape);
      emit_forward(r, s);
    }
    if (cfg_.pass != AttentionPass::fwd) {
      s.dout = local("dout", e, q_shape);
      s.dq = local("dq", e, q_shape);
      s.dq_acc = local("dq_acc", acc_, q_shape);
      s.blk_dq = local("block_dq", acc_, q_shape);
      s.dkv = kv_slot(r, "dkv", e, r);
      emit_backward(r, s);
    }
  }

  // K/V rotation for one pass: fills kv_src[i] with the slot holding step i's K/V and appends to
  // waits_ whatever step i must wait for; returns nothing (ops are emitted at the right points).
  struct KvRing {
    std::vector<SlotId> src;   // slot holding step i's K/V
    std::vector<OpId> arrive;  // op after which step i's K/V is present (-1 for step 0)
  };

  KvRing start_kv_ring(int r, const RankSlots& s, Phase phase) {
    KvRing ring;
    ring.src.assign(static_cast<std::size_t>(n_), s.kv);
    ring.arrive.assign(static_cast<std::size_t>(n_), -1);
    if (cfg_.rotate == KvRotation::allgather && n_ > 1) {
      const SlotId all = kv_slot(r, fmt::format("kv_all_{}", to_string(phase)), cfg_.dtype, 0, n_);
      const OpId ag =
          builder_.add(r, comm_, phase == Phase::fwd ? "kv all-gather" : "kv all-gather (bwd)",
                       OpLabels{phase, -1, -1, 0, -1},
                       CollectiveCall{CollectiveKind::all_gather, group_, n_ * kv_bytes(),
                                      cfg_.dtype, 0, s.kv, all});
      for (int i = 1; i < n_; ++i) {
        ring.src[static_cast<std::size_t>(i)] = all;
        ring.arrive[static_cast<std::size_t>(i)] = ag;
      }
    }
    return ring;
  }

  // At the top of step i: wait for this step's K/V, then post the exchange for step i+1.
  void kv_ring_step(int r, KvRing& ring, int i, Phase phase) {
    const auto ui = static_cast<std::size_t>(i);
    if (i > 0 && (cfg_.rotate != KvRotation::allgather || i == 1)) {
      waits_.push_back(ring.arrive[ui]);
    }
    if (cfg_.rotate == KvRotation::allgather || i + 1 >= n_) return;
    const SlotId next = kv_slot(r, fmt::format("kv_{}_step{}", to_string(phase), i + 1), cfg_.dtype,
                                kv_owner(r, i + 1));
    const int tag = (phase == Phase::fwd ? 0 : n_) + i;
    ring.arrive[ui + 1] = rotation(
        r, fmt::format("kv {} step {}", cfg_.rotate == KvRotation::p2p ? "exchange" : "permute", i),
        phase, i, ring.src[ui], next, kv_bytes(), cfg_.dtype, tag,
        cfg_.rotate == KvRotation::alltoall, {});
    ring.src[ui + 1] = next;
  }

  void emit_forward(int r, const RankSlots& s) {
    KvRing ring = start_kv_ring(r, s, Phase::fwd);
    bool first = true;
    for (int i = 0; i < n_; ++i) {
      kv_ring_step(r, ring, i, Phase::fwd);
      const Block b = block(r, i);
      if (!b.computed) continue;  // K/V still pass through
      const SlotId kv_in = ring.src[static_cast<std::size_t>(i)];
      kernel(
          r, fmt::format("attn fwd step {}", i), Phase::fwd, i, KernelKind::attention_fwd,
          cfg_.dtype, attention_shape(b), {s.q, kv_in},
          first ? std::vector<SlotId>{s.out_acc, s.lse} : std::vector<SlotId>{s.blk_out, s.blk_lse},
          take_waits());
      if (!first) {
        AttentionShape merge{cfg_.batch, cfg_.heads, cfg_.kv_heads, cfg_.head_dim, MaskMode::none,
                             b.q,        {}};
        kernel(r, fmt::format("lse merge step {}", i), Phase::fwd, i, KernelKind::lse_merge, acc_,
               std::move(merge), {s.blk_out, s.blk_lse, s.out_acc, s.lse}, {s.out_acc, s.lse}, {});
      }
      first = false;
    }
    kernel(r, "out cast", Phase::fwd, -1, KernelKind::copy, cfg_.dtype, VectorShape{q_elems_},
           {s.out_acc}, {s.out}, take_waits());
  }

  void emit_backward(int r, const RankSlots& s) {
    KvRing ring = start_kv_ring(r, s, Phase::bwd);
    const bool permute = cfg_.rotate != KvRotation::p2p;  // torch rotates dK/dV by all-to-all
    const std::int64_t dkv_bytes = kv_elems_ * dtype_bytes(acc_);
    // Step 0's block gradient starts the accumulator this rank passes on; later blocks go to
    // block_dkv and are added into the accumulator received from rank r-1.
    SlotId dkv_held = kv_slot(r, "dkv_step0", acc_, r);
    OpId dkv_arrive = -1;
    for (int i = 0; i < n_; ++i) {
      kv_ring_step(r, ring, i, Phase::bwd);
      const Block b = block(r, i);
      OpId send_after = -1;
      // The block gradient of the K/V this step works on (its owner's tokens).
      const SlotId blk_dkv = i == 0 || !b.computed ? dkv_held
                                                   : kv_slot(r, fmt::format("block_dkv_step{}", i),
                                                             acc_, kv_owner(r, i));
      if (b.computed) {
        const OpId bwd = kernel(r, fmt::format("attn bwd step {}", i), Phase::bwd, i,
                                KernelKind::attention_bwd, cfg_.dtype, attention_shape(b),
                                {s.q, ring.src[static_cast<std::size_t>(i)], s.out, s.dout, s.lse},
                                {s.blk_dq, blk_dkv}, take_waits());
        kernel(r, fmt::format("dq accumulate step {}", i), Phase::bwd, i, KernelKind::accumulate,
               acc_, row_block(b.q, {}), {s.blk_dq, s.dq_acc}, {s.dq_acc}, {});
        send_after = bwd;
      }
      if (i > 0) {
        waits_.push_back(dkv_arrive);  // the dK/dV accumulated so far by the ranks before
        if (b.computed) {
          send_after = kernel(r, fmt::format("dkv accumulate step {}", i), Phase::bwd, i,
                              KernelKind::accumulate, acc_, row_block({}, b.k), {blk_dkv, dkv_held},
                              {dkv_held}, take_waits());
        }
      }
      if (n_ == 1) break;
      const SlotId next = kv_slot(r, fmt::format("dkv_step{}", i + 1), acc_, kv_owner(r, i + 1));
      dkv_arrive = rotation(r, fmt::format("dkv {} step {}", permute ? "permute" : "exchange", i),
                            Phase::bwd, i, dkv_held, next, dkv_bytes, acc_, 2 * n_ + i, permute,
                            send_after >= 0 ? std::vector<OpId>{send_after} : std::vector<OpId>{});
      dkv_held = next;
    }
    if (dkv_arrive >= 0) waits_.push_back(dkv_arrive);
    kernel(r, "dkv cast", Phase::bwd, -1, KernelKind::copy, cfg_.dtype, VectorShape{kv_elems_},
           {dkv_held}, {s.dkv}, take_waits());
    kernel(r, "dq cast", Phase::bwd, -1, KernelKind::copy, cfg_.dtype, VectorShape{q_elems_},
           {s.dq_acc}, {s.dq}, {});
  }

  std::int64_t kv_bytes() const { return kv_elems_ * dtype_bytes(cfg_.dtype); }

  const RingAttentionConfig& cfg_;
  int n_;
  std::int64_t tokens_;
  ProgramBuilder builder_;
  StreamId compute_ = 0, comm_ = 0;
  GroupId group_ = 0;
  std::int64_t kv_elems_ = 0, q_elems_ = 0;
  // Accumulators, block results and lse: fp32 (FlashAttention's), fp64 for fp64 runs.
  DType acc_ = DType::fp32;
  std::vector<OpId> waits_;  // event waits recorded on the compute stream, not yet consumed
};

}  // namespace

std::string_view to_string(RingVariant v) {
  return kVariantNames[static_cast<std::size_t>(v)];
}
std::string_view to_string(KvRotation r) {
  return kRotationNames[static_cast<std::size_t>(r)];
}
std::string_view to_string(AttentionPass p) {
  return kPassNames[static_cast<std::size_t>(p)];
}
std::optional<RingVariant> parse_ring_variant(std::string_view s) {
  return parse_enum_name<RingVariant>(kVariantNames, s);
}
std::optional<KvRotation> parse_kv_rotation(std::string_view s) {
  return parse_enum_name<KvRotation>(kRotationNames, s);
}
std::optional<AttentionPass> parse_attention_pass(std::string_view s) {
  return parse_enum_name<AttentionPass>(kPassNames, s);
}

void check_config(const RingAttentionConfig& c) {
  require_positive(c.cp, "--cp");
  require_positive(c.seq, "--seq");
  require_positive(c.batch, "--batch");
  require_positive(c.heads, "--heads");
  require_positive(c.kv_heads, "--kv-heads");
  require_positive(c.head_dim, "--head-dim");
  require_positive(c.gpus_per_node, "--gpus-per-node");
  if (c.cp > kMaxCp) {
    throw InputError(fmt::format("--cp must be at most {}, got {}", kMaxCp, c.cp));
  }
  if (c.variant == RingVariant::zigzag && !c.causal) {
    throw InputError(
        "--variant zigzag requires --causal (its load balance only exists for causal masks); "
        "use --variant ring with --no-causal");
  }
  if (c.variant == RingVariant::zigzag && c.seq % (2 * c.cp) != 0) {
    throw InputError(fmt::format(
        "--seq {} must be divisible by 2 x --cp = {} (zigzag splits each rank's share in two)",
        c.seq, 2 * c.cp));
  }
  if (c.seq % c.cp != 0) {
    throw InputError(fmt::format("--seq {} must be divisible by --cp {}", c.seq, c.cp));
  }
  if (c.heads % c.kv_heads != 0) {
    throw InputError(
        fmt::format("--heads {} must be divisible by --kv-heads {}", c.heads, c.kv_heads));
  }
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
  if (c.batch * (c.seq / c.cp) > kMaxElements / c.heads / c.head_dim) {
    throw InputError(
        "--batch x --seq / --cp x --heads x --head-dim exceeds 2^40 elements per rank");
  }
}

std::int64_t kv_bytes_per_rank(const RingAttentionConfig& c) {
  return 2 * c.batch * (c.seq / c.cp) * c.kv_heads * c.head_dim * dtype_bytes(c.dtype);
}

std::vector<TokenRange> rank_tokens(const RingAttentionConfig& c, int rank) {
  const std::int64_t tokens = c.seq / c.cp;
  if (c.variant == RingVariant::ring) return {TokenRange{rank * tokens, (rank + 1) * tokens}};
  const std::int64_t h = tokens / 2;
  const std::int64_t tail = 2 * c.cp - 1 - rank;
  return {TokenRange{rank * h, (rank + 1) * h}, TokenRange{tail * h, (tail + 1) * h}};
}

Program build_ring_attention(const RingAttentionConfig& config) {
  check_config(config);
  return RingBuilder(config).build();
}

}  // namespace meshsim
