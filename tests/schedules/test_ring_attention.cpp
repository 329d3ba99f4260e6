#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "schedules/ring_attention.hpp"
#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/metrics.hpp"

using namespace meshsim;

namespace {

RingAttentionConfig small(int cp, std::int64_t seq, RingVariant v, KvRotation rot = KvRotation::p2p,
                          AttentionPass pass = AttentionPass::fwd_bwd, bool causal = true) {
  RingAttentionConfig c;
  c.cp = cp;
  c.seq = seq;
  c.batch = 1;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 4;
  c.variant = v;
  c.kv_rotation = rot;
  c.pass = pass;
  c.causal = causal;
  return c;
}

std::vector<std::int64_t> fwd_pairs_per_rank(const Program& p) {
  std::vector<std::int64_t> pairs(static_cast<std::size_t>(p.world_size()), 0);
  for (const auto& op : p.ops) {
    const auto* k = std::get_if<KernelCall>(&op.body);
    if (k != nullptr && k->kind == KernelKind::attention_fwd) {
      pairs[static_cast<std::size_t>(op.rank)] +=
          attention_pairs(std::get<AttentionShape>(k->shape));
    }
  }
  return pairs;
}

// How many times each (query, key) pair of the S x S grid is computed by blocks of `kind`.
std::vector<int> coverage(const Program& p, std::int64_t seq, KernelKind kind) {
  std::vector<int> grid(static_cast<std::size_t>(seq * seq), 0);
  for (const auto& op : p.ops) {
    const auto* k = std::get_if<KernelCall>(&op.body);
    if (k == nullptr || k->kind != kind) continue;
    const auto& s = std::get<AttentionShape>(k->shape);
    for (const auto& q : s.q) {
      for (std::int64_t i = q.begin; i < q.end; ++i) {
        for (const auto& kr : s.k) {
          for (std::int64_t j = kr.begin; j < kr.end; ++j) {
            if (s.mask == MaskMode::none || j <= i) ++grid[static_cast<std::size_t>(i * seq + j)];
          }
        }
      }
    }
  }
  return grid;
}

struct Counts {
  std::int64_t sends = 0, bytes = 0, collectives = 0;
};

std::vector<Counts> comm_counts(const Program& p) {
  const CommPlan plan = validate_program(p);
  std::vector<Counts> out(static_cast<std::size_t>(p.world_size()));
  for (const auto& t : plan.transfers) {
    ++out[static_cast<std::size_t>(t.src)].sends;
    out[static_cast<std::size_t>(t.src)].bytes += t.bytes;
  }
  for (const auto& op : p.ops) {
    if (const auto* c = std::get_if<CollectiveCall>(&op.body)) {
      auto& o = out[static_cast<std::size_t>(op.rank)];
      if (c->kind == CollectiveKind::permute) {
        ++o.sends;
        o.bytes += c->bytes;
      } else {
        ++o.collectives;
      }
    }
  }
  return out;
}

std::string config_error(const RingAttentionConfig& c) {
  try {
    check_config(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("pairs per rank, N = 4, c = 8, causal (ARCHITECTURE.md §6)") {
  // ring: c(c+1)/2 + r c^2 = 36 + 64 r -> 36, 100, 164, 228
  const auto ring = fwd_pairs_per_rank(build_ring_attention(small(4, 32, RingVariant::ring)));
  CHECK(ring == std::vector<std::int64_t>{36, 100, 164, 228});
  // zigzag (h = 4): step 0 h(h+1) + h^2 = 36, then N-1 steps of 2h*h = 32 -> 36 + 96 = 132
  const auto zz = fwd_pairs_per_rank(build_ring_attention(small(4, 32, RingVariant::zigzag)));
  CHECK(zz == std::vector<std::int64_t>{132, 132, 132, 132});
}

TEST_CASE("computed pairs cover the causal triangle exactly once, forward and backward") {
  for (int n : {1, 2, 3, 4, 5, 8}) {
    for (RingVariant v : {RingVariant::ring, RingVariant::zigzag}) {
      const std::int64_t seq = 2 * n * 3;  // h = 3 tokens per zigzag chunk
      const Program p = build_ring_attention(small(n, seq, v));
      for (KernelKind kind : {KernelKind::attention_fwd, KernelKind::attention_bwd}) {
        const auto grid = coverage(p, seq, kind);
        int wrong = 0;
        for (std::int64_t i = 0; i < seq; ++i) {
          for (std::int64_t j = 0; j < seq; ++j) {
            const int expect = j <= i ? 1 : 0;
            wrong += grid[static_cast<std::size_t>(i * seq + j)] != expect ? 1 : 0;
          }
        }
        CAPTURE(n);
        CAPTURE(to_string(v));
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("non-causal ring covers the full square exactly once") {
  for (int n : {1, 3, 4}) {
    const std::int64_t seq = 4 * n;
    const Program p = build_ring_attention(
        small(n, seq, RingVariant::ring, KvRotation::p2p, AttentionPass::fwd, false));
    const auto grid = coverage(p, seq, KernelKind::attention_fwd);
    for (int g : grid) CHECK(g == 1);
  }
}

TEST_CASE("forward: N steps, N-1 K/V transfers per rank; causal ring computes r+1 steps") {
  const int n = 4;
  const Program p =
      build_ring_attention(small(n, 32, RingVariant::ring, KvRotation::p2p, AttentionPass::fwd));
  std::map<int, int> computed;
  for (const auto& op : p.ops) {
    const auto* k = std::get_if<KernelCall>(&op.body);
    if (k != nullptr && k->kind == KernelKind::attention_fwd) ++computed[op.rank];
  }
  const auto counts = comm_counts(p);
  // KV_r = 2 b c H_kv d e = 2 * 1 * 8 * 1 * 4 * 2 = 128 bytes
  const std::int64_t kv = kv_bytes_per_rank(small(n, 32, RingVariant::ring));
  CHECK(kv == 128);
  for (int r = 0; r < n; ++r) {
    CHECK(computed[r] == r + 1);
    CHECK(counts[static_cast<std::size_t>(r)].sends == n - 1);
    CHECK(counts[static_cast<std::size_t>(r)].bytes == (n - 1) * kv);
  }
}

TEST_CASE("backward adds N dK/dV transfers in fp32 (twice the bf16 K/V bytes)") {
  const int n = 4;
  const auto cfg = small(n, 32, RingVariant::zigzag, KvRotation::p2p, AttentionPass::bwd);
  const auto counts = comm_counts(build_ring_attention(cfg));
  const std::int64_t kv = kv_bytes_per_rank(cfg);
  for (const auto& c : counts) {
    CHECK(c.sends == (n - 1) + n);                // K/V ring + dK/dV ring
    CHECK(c.bytes == (n - 1) * kv + n * 2 * kv);  // fp32 accumulators: 2 x bf16 bytes
  }
  const auto both = comm_counts(build_ring_attention(
      small(n, 32, RingVariant::zigzag, KvRotation::p2p, AttentionPass::fwd_bwd)));
  for (const auto& c : both) CHECK(c.sends == 2 * (n - 1) + n);
}

TEST_CASE("rotations: one all-gather per pass, or one permutation per step") {
  const int n = 4;
  const auto ag = comm_counts(build_ring_attention(
      small(n, 32, RingVariant::zigzag, KvRotation::all_gather, AttentionPass::fwd)));
  for (const auto& c : ag) {
    CHECK(c.collectives == 1);
    CHECK(c.sends == 0);
  }
  const auto a2a = comm_counts(build_ring_attention(
      small(n, 32, RingVariant::zigzag, KvRotation::all_to_all, AttentionPass::fwd_bwd)));
  for (const auto& c : a2a) {
    CHECK(c.collectives == 0);
    CHECK(c.sends == 2 * (n - 1) + n);  // K/V permutes both passes + dK/dV permutes
  }
  // all-gather backward: one K/V all-gather plus N dK/dV permutes (as torch rotates dK/dV)
  const auto agb = comm_counts(build_ring_attention(
      small(n, 32, RingVariant::zigzag, KvRotation::all_gather, AttentionPass::bwd)));
  for (const auto& c : agb) {
    CHECK(c.collectives == 1);
    CHECK(c.sends == n);
  }
}

TEST_CASE("grouped-query attention shrinks K/V: KV_r = 2 b c H_kv d e") {
  RingAttentionConfig c = small(4, 64, RingVariant::ring);
  c.heads = 8;
  c.kv_heads = 2;
  c.batch = 3;
  c.dtype = DType::fp32;
  CHECK(kv_bytes_per_rank(c) == 2 * 3 * 16 * 2 * 4 * 4);
}

TEST_CASE("every variant, rotation and pass is deadlock-free with one or several queues") {
  for (int n : {1, 2, 3, 8}) {
    for (RingVariant v : {RingVariant::ring, RingVariant::zigzag}) {
      for (KvRotation rot : {KvRotation::p2p, KvRotation::all_gather, KvRotation::all_to_all}) {
        for (AttentionPass pass :
             {AttentionPass::fwd, AttentionPass::bwd, AttentionPass::fwd_bwd}) {
          for (bool single : {true, false}) {
            RingAttentionConfig c = small(n, 2 * n * 2, v, rot, pass);
            c.single_queue = single;
            CHECK_NOTHROW(validate_program(build_ring_attention(c)));
          }
        }
      }
    }
  }
}

// The same op with the tensor slots it names cleared (kernel operands, transfer and collective
// buffers): what a Program built without slots holds.
Op without_slots(Op op) {
  if (auto* k = std::get_if<KernelCall>(&op.body)) {
    k->inputs.clear();
    k->outputs.clear();
  } else if (auto* c = std::get_if<P2PCall>(&op.body)) {
    for (auto* list : {&c->sends, &c->recvs}) {
      for (Transfer& t : *list) t.slot = -1;
    }
  } else {
    auto& coll = std::get<CollectiveCall>(op.body);
    coll.input = -1;
    coll.output = -1;
  }
  return op;
}

TEST_CASE("without tensor slots: the same ops, deps and shapes, the same simulated times") {
  // tensor_slots = false is what `meshsim ring-attention` simulates (the slots are for validate):
  // every op must be the one built with slots, minus the slot ids, and time the same.
  const HardwareProfile hw = load_hardware("h100-sxm");
  for (int n : {1, 3, 8}) {
    for (RingVariant v : {RingVariant::ring, RingVariant::zigzag}) {
      for (KvRotation rot : {KvRotation::p2p, KvRotation::all_gather, KvRotation::all_to_all}) {
        for (AttentionPass pass :
             {AttentionPass::fwd, AttentionPass::bwd, AttentionPass::fwd_bwd}) {
          RingAttentionConfig c = small(n, 2 * n * 64, v, rot, pass);
          const Program with = build_ring_attention(c);
          c.tensor_slots = false;
          const Program without = build_ring_attention(c);
          CAPTURE(n);
          CAPTURE(to_string(v));
          CAPTURE(to_string(rot));
          CAPTURE(to_string(pass));
          CHECK(!with.slots.empty());
          CHECK(without.slots.empty());
          REQUIRE(with.ops.size() == without.ops.size());
          for (std::size_t i = 0; i < with.ops.size(); ++i) {
            CHECK(without_slots(with.ops[i]) == without.ops[i]);
          }
          CHECK(with.dep_offsets == without.dep_offsets);
          CHECK(with.dep_targets == without.dep_targets);
          const CommPlan plan_with = validate_program(with);
          const CommPlan plan_without = validate_program(without);
          const Timeline a = simulate(with, plan_with, estimate_durations(with, plan_with, hw));
          const Timeline b =
              simulate(without, plan_without, estimate_durations(without, plan_without, hw));
          CHECK(a.makespan == b.makespan);
          CHECK(a.events == b.events);
        }
      }
    }
  }
}

TEST_CASE("exact step time with unit costs: N = 2 causal ring forward") {
  // Every compute op costs C, every transfer X. Rank 1: attn step 0 (0..C) overlaps the K/V
  // exchange (0..X); attn step 1 waits for both, then merge and cast: max(C, X) + 3C.
  for (Nanos x : {Nanos{50}, Nanos{250}}) {
    const Nanos c = 100;
    const Program p =
        build_ring_attention(small(2, 8, RingVariant::ring, KvRotation::p2p, AttentionPass::fwd));
    const CommPlan plan = validate_program(p);
    Durations d;
    d.ops.assign(p.ops.size(), c);
    d.transfers.assign(plan.transfers.size(), x);
    const Timeline t = simulate(p, plan, d);
    CHECK(t.makespan == std::max(c, x) + 3 * c);
  }
}

TEST_CASE("simulation is deterministic bit for bit") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  RingAttentionConfig c;  // the CLI defaults: cp 8, 128k, zigzag, p2p, fwd+bwd
  const Program p = build_ring_attention(c);
  const CommPlan plan = validate_program(p);
  const Durations d = estimate_durations(p, plan, hw);
  const Timeline a = simulate(p, plan, d);
  const Timeline b = simulate(p, plan, d);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].start == b.ops[i].start);
    CHECK(a.ops[i].end == b.ops[i].end);
  }
  CHECK(a.events == b.events);
  // zigzag balances the work: every rank computes the same pairs
  const RunMetrics m = compute_metrics(p, plan, a);
  for (const auto& r : m.ranks) CHECK(r.attn_pairs == m.ranks[0].attn_pairs);
}

TEST_CASE("impossible configurations are rejected naming the flag") {
  CHECK(config_error(small(4, 30, RingVariant::ring)).find("`seq` 30") != std::string::npos);
  CHECK(config_error(small(4, 36, RingVariant::zigzag)).find("2 x `cp`") != std::string::npos);
  auto nc = small(4, 32, RingVariant::zigzag);
  nc.causal = false;
  CHECK(config_error(nc).find("`causal`") != std::string::npos);
  auto gqa = small(4, 32, RingVariant::ring);
  gqa.heads = 6;
  gqa.kv_heads = 4;
  CHECK(config_error(gqa).find("`kv_heads`") != std::string::npos);
  auto zero = small(4, 32, RingVariant::ring);
  zero.cp = 0;
  CHECK(config_error(zero).find("`cp`") != std::string::npos);
  CHECK(config_error(small(4, 32, RingVariant::zigzag)).empty());
}
