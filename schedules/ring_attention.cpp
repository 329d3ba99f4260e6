#include "schedules/ring_attention.hpp"
#include "sim/enum_names.hpp"
#include "sim/size_math.hpp"

#include <array>

#include <fmt/format.h>

#include "schedules/ring_emitter.hpp"
#include "sim/error.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, 2> kVariantNames = {"ring", "zigzag"};
constexpr std::array<std::string_view, 3> kRotationNames = {"p2p", "allgather", "alltoall"};
constexpr std::array<std::string_view, 3> kPassNames = {"fwd", "bwd", "fwd+bwd"};

class RingBuilder final : private RingEmitHost {
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
    acc_ = accumulator_dtype(cfg.dtype);
  }

  Program build() && {
    emit_rank(0);
    // Every rank emits as many ops and slots as the first (the ring is symmetric): room for all of
    // them at once instead of growing the arrays by copies.
    const auto ranks = static_cast<std::size_t>(n_);
    builder_.reserve(builder_.peek().ops.size() * ranks, builder_.peek().slots.size() * ranks);
    for (int r = 1; r < n_; ++r) emit_rank(r);
    return std::move(builder_).finish();
  }

  static std::string describe(const RingAttentionConfig& c) {
    return fmt::format(
        "ring attention: cp={} seq={} batch={} heads={} kv_heads={} head_dim={} dtype={} "
        "variant={} rotate={} {} pass={}",
        c.cp, c.seq, c.batch, c.heads, c.kv_heads, c.head_dim, to_string(c.dtype),
        to_string(c.variant), to_string(c.kv_rotation), c.causal ? "causal" : "non-causal",
        to_string(c.pass));
  }

 private:
  // ---- RingEmitHost: one rank of a ring of its own, with tensor slots unless tensor_slots is off
  // ----------------------------
  OpId ring_kernel(OpName name, Phase phase, int step, KernelCall call) override {
    std::vector<OpId> deps;
    deps.swap(waits_);
    return builder_.add(r_, compute_, name, OpLabels{phase, -1, -1, step, -1}, std::move(call),
                        std::move(deps));
  }
  OpId ring_comm(OpName name, Phase phase, int step, OpBody body, std::vector<OpId> deps) override {
    return builder_.add(r_, comm_, name, OpLabels{phase, -1, -1, step, -1}, std::move(body),
                        std::move(deps));
  }
  void ring_wait(OpId op) override { waits_.push_back(op); }
  std::vector<OpId> kv_producer() override { return {}; }  // K/V are inputs
  int cp_rank(int cp_index) const override { return cp_index; }
  GroupId cp_group() const override { return group_; }
  SlotId ring_slot(std::string name, DType dtype, std::vector<std::int64_t> shape,
                   std::vector<TokenRange> tokens) override {
    return builder_.slot(r_, std::move(name), dtype, std::move(shape), std::move(tokens));
  }

  // A packed K/V buffer holding rank r's tokens (-1 in a Program without tensor slots).
  SlotId kv_slot(int r, std::string name, DType dtype) {
    if (!cfg_.tensor_slots) return -1;
    return builder_.slot(r, std::move(name), dtype,
                         {2, cfg_.batch, tokens_, cfg_.kv_heads, cfg_.head_dim},
                         rank_tokens(cfg_, r));
  }

  void emit_rank(int r) {
    r_ = r;
    waits_.clear();
    RingEmitStyle style;
    style.tensors = cfg_.tensor_slots;
    const RingEmitter emitter(cfg_, r, style);
    const DType e = cfg_.dtype;
    const std::vector<std::int64_t> q_shape{cfg_.batch, tokens_, cfg_.heads, cfg_.head_dim};
    const std::vector<std::int64_t> lse_shape{cfg_.batch, cfg_.heads, tokens_};
    const std::vector<TokenRange> mine = rank_tokens(cfg_, r);
    auto local = [&](std::string name, DType dtype, const std::vector<std::int64_t>& shape) {
      return cfg_.tensor_slots ? builder_.slot(r, std::move(name), dtype, shape, mine) : SlotId{-1};
    };
    RingTensors s{};
    s.q = local("q", e, q_shape);
    s.kv = kv_slot(r, "kv", e);
    s.out = local("out", e, q_shape);
    s.lse = local("lse", acc_, lse_shape);
    if (cfg_.pass != AttentionPass::bwd) {
      s.out_acc = local("out_acc", acc_, q_shape);
      s.blk_out = local("block_out", acc_, q_shape);
      s.blk_lse = local("block_lse", acc_, lse_shape);
      emitter.forward(*this, s, Phase::fwd, "");
    }
    if (cfg_.pass != AttentionPass::fwd) {
      s.dout = local("dout", e, q_shape);
      s.dq = local("dq", e, q_shape);
      s.dq_acc = local("dq_acc", acc_, q_shape);
      s.blk_dq = local("block_dq", acc_, q_shape);
      s.dkv = kv_slot(r, "dkv", e);
      emitter.backward(*this, s);
    }
  }

  const RingAttentionConfig& cfg_;
  int n_;
  std::int64_t tokens_;
  ProgramBuilder builder_;
  StreamId compute_ = 0, comm_ = 0;
  GroupId group_ = 0;
  // Accumulators, block results and lse: fp32 (FlashAttention's), fp64 for fp64 runs.
  DType acc_ = DType::fp32;
  int r_ = 0;                // the rank being emitted
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
  require_positive(c.cp, "cp");
  require_positive(c.seq, "seq");
  require_positive(c.batch, "batch");
  require_positive(c.heads, "heads");
  require_positive(c.kv_heads, "kv_heads");
  require_positive(c.head_dim, "head_dim");
  require_positive(c.gpus_per_node, "gpus_per_node");
  if (c.cp > kMaxRingCp) {
    throw InputError(fmt::format("`cp` must be at most {}, got {}", kMaxRingCp, c.cp));
  }
  if (c.variant == RingVariant::zigzag && !c.causal) {
    throw InputError(
        "`variant` zigzag requires `causal` (its load balance only exists for causal masks); "
        "use `variant` ring with `no_causal`");
  }
  if (c.variant == RingVariant::zigzag && c.seq % (2 * c.cp) != 0) {
    throw InputError(fmt::format(
        "`seq` {} must be divisible by 2 x `cp` = {} (zigzag splits each rank's share in two)",
        c.seq, 2 * c.cp));
  }
  if (c.seq % c.cp != 0) {
    throw InputError(fmt::format("`seq` {} must be divisible by `cp` {}", c.seq, c.cp));
  }
  if (c.heads % c.kv_heads != 0) {
    throw InputError(
        fmt::format("`heads` {} must be divisible by `kv_heads` {}", c.heads, c.kv_heads));
  }
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
  if (product_exceeds({c.batch, c.seq / c.cp, c.heads, c.head_dim}, kMaxElements)) {
    throw InputError(
        "`batch` x `seq` / `cp` x `heads` x `head_dim` exceeds 2^40 elements per rank");
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
