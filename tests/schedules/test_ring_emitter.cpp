#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "schedules/ring_emitter.hpp"

using namespace meshsim;

namespace {

// A host that records what the emitter asks for, with no Program behind it.
struct RecordingHost final : RingEmitHost {
  struct Call {
    std::string name;
    bool comm = false;
    std::vector<OpId> deps;
    KernelCall kernel;
  };
  std::vector<Call> calls;
  std::vector<OpId> pending;
  std::vector<OpId> producer;
  int slots = 0;

  OpId ring_kernel(OpName name, Phase, int, KernelCall call) override {
    calls.push_back({name.str(), false, pending, std::move(call)});
    pending.clear();
    return static_cast<OpId>(calls.size() - 1);
  }
  OpId ring_comm(OpName name, Phase, int, OpBody, std::vector<OpId> deps) override {
    calls.push_back({name.str(), true, std::move(deps), {}});
    return static_cast<OpId>(calls.size() - 1);
  }
  void ring_wait(OpId op) override { pending.push_back(op); }
  std::vector<OpId> kv_producer() override { return producer; }
  int cp_rank(int i) const override { return 100 + i; }
  GroupId cp_group() const override { return 7; }
  SlotId ring_slot(std::string, DType, std::vector<std::int64_t>,
                   std::vector<TokenRange>) override {
    return slots++;
  }
};

RingAttentionConfig config(int cp, RingVariant v, KvRotation rot) {
  RingAttentionConfig c;
  c.cp = cp;
  c.seq = 16 * cp;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 4;
  c.variant = v;
  c.kv_rotation = rot;
  return c;
}

int count(const RecordingHost& h, const std::string& prefix) {
  int n = 0;
  for (const auto& c : h.calls) n += c.name.starts_with(prefix) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("ring_block: causal ring computes steps 0..r, zigzag every step") {
  const auto ring = config(4, RingVariant::ring, KvRotation::p2p);
  for (int r = 0; r < 4; ++r) {
    for (int i = 0; i < 4; ++i) CHECK(ring_block(ring, r, i).computed == (i <= r));
    CHECK(ring_block(ring, r, 0).mask == MaskMode::causal);
  }
  const auto zz = config(4, RingVariant::zigzag, KvRotation::p2p);
  // Rank 1 at step 2 holds rank 3's K/V (kv_owner = (1 - 2) mod 4): after the diagonal only
  // its second local chunk (positions 2N-1-r = 6 of 8 half chunks of 8 tokens) attends.
  CHECK(kv_owner(zz, 1, 2) == 3);
  const RingBlock b = ring_block(zz, 1, 2);
  REQUIRE(b.computed);
  REQUIRE(b.q.size() == 1);
  CHECK(b.q[0].begin == 6 * 8);
  CHECK(b.k.size() == 2);
}

TEST_CASE("RingEmitter: the first rotation waits for K/V's producer, later ones do not") {
  RecordingHost h;
  h.producer = {42};
  const RingEmitter e(config(4, RingVariant::zigzag, KvRotation::p2p), 2, RingEmitStyle{});
  e.forward(h, RingTensors{}, Phase::fwd, "");
  // N - 1 = 3 exchanges, 4 blocks, 3 merges, one cast.
  CHECK(count(h, "kv exchange") == 3);
  CHECK(count(h, "attn fwd") == 4);
  CHECK(count(h, "lse merge") == 3);
  CHECK(count(h, "out cast") == 1);
  REQUIRE(h.calls[0].name == "kv exchange step 0");
  CHECK(h.calls[0].deps == std::vector<OpId>{42});
  for (const auto& c : h.calls) {
    if (c.comm && c.name != "kv exchange step 0") CHECK(c.deps.empty());
  }
}

TEST_CASE("RingEmitter: each op is named by its step, with the recompute prefix") {
  // The names come from a per-thread table shared by every rank's emission: two ranks, a
  // recomputed forward and a backward in one thread must each read their own step's name.
  const RingEmitter r2(config(4, RingVariant::zigzag, KvRotation::p2p), 2, RingEmitStyle{});
  const RingEmitter r0(config(4, RingVariant::zigzag, KvRotation::p2p), 0, RingEmitStyle{});
  RecordingHost a, b, c;
  r2.forward(a, RingTensors{}, Phase::fwd, "");
  r0.forward(b, RingTensors{}, Phase::bwd, "recompute ");
  r2.backward(c, RingTensors{});
  std::vector<std::string> fwd, recomputed, bwd;
  for (const auto& call : a.calls) fwd.push_back(call.name);
  for (const auto& call : b.calls) recomputed.push_back(call.name);
  for (const auto& call : c.calls) bwd.push_back(call.name);
  // Zigzag computes a block at every step: exchange i posts step i + 1's K/V, merges from step 1.
  CHECK(fwd == std::vector<std::string>{"kv exchange step 0", "attn fwd step 0",
                                        "kv exchange step 1", "attn fwd step 1", "lse merge step 1",
                                        "kv exchange step 2", "attn fwd step 2", "lse merge step 2",
                                        "attn fwd step 3", "lse merge step 3", "out cast"});
  CHECK(recomputed[1] == "recompute attn fwd step 0");
  CHECK(recomputed[4] == "recompute lse merge step 1");
  CHECK(std::count(bwd.begin(), bwd.end(), "dkv exchange step 3") == 1);
  CHECK(std::count(bwd.begin(), bwd.end(), "dq accumulate step 2") == 1);
}

TEST_CASE("RingEmitter: backward sends N-1 dK/dV hops in the accumulator dtype; no tensors") {
  RecordingHost h;
  RingEmitStyle style;
  style.tensors = false;
  const RingEmitter e(config(4, RingVariant::ring, KvRotation::all_to_all), 1, style);
  e.backward(h, RingTensors{});
  CHECK(count(h, "kv permute") == 3);
  CHECK(count(h, "dkv permute") == 4);  // one per step: the ring closes back on the owner
  // ring variant, rank 1: steps 0 and 1 computed -> 2 attention backward blocks.
  CHECK(count(h, "attn bwd") == 2);
  CHECK(h.slots == 0);
  for (const auto& c : h.calls) {
    if (!c.comm) CHECK(c.kernel.inputs.empty());
  }
  CHECK(e.accumulator() == DType::fp32);
  // K/V per rank: 2 x b x S/N x H_kv x d = 2 x 1 x 16 x 1 x 4.
  CHECK(e.kv_elems() == 128);
}
