#pragma once
// The emission of ring attention for one rank (ARCHITECTURE.md §4.1), shared by
// build_ring_attention (a ring of its own, with tensor slots) and the training step (the attention
// core of every layer, without slots): the block each ring step computes, the K/V rotation (p2p
// exchanges, one all-gather, or permutes), the forward with log-sum-exp merges and the backward
// with the dK/dV ring in the accumulator dtype. The host owns the Program: streams, groups, labels
// (layer, microbatch, chunk) and the pending waits of its compute stream.
#include <string>
#include <vector>

#include "schedules/ring_attention.hpp"
#include "sim/program.hpp"

namespace meshsim {

// What rank r computes at ring step i (ARCHITECTURE.md §4.1).
struct RingBlock {
  bool computed = false;
  MaskMode mask = MaskMode::none;
  std::vector<TokenRange> q;  // query rows (also the rows merged)
  std::vector<TokenRange> k;  // key positions
};

RingBlock ring_block(const RingAttentionConfig& config, int rank, int step);

// The rank whose K/V rank r holds at ring step i.
int kv_owner(const RingAttentionConfig& config, int rank, int step);

// The slots of one rank's inputs, outputs and scratch (all -1 when the Program has no tensors).
struct RingTensors {
  SlotId q = -1, kv = -1, out = -1, lse = -1, out_acc = -1, blk_out = -1, blk_lse = -1;
  SlotId dout = -1, dq = -1, dq_acc = -1, blk_dq = -1, dkv = -1;
};

class RingEmitHost {
 public:
  // A kernel on the compute stream; it waits for (and consumes) the pending waits.
  virtual OpId ring_kernel(OpName name, Phase phase, int step, KernelCall call) = 0;
  // An op on the CP communication stream with exactly these deps.
  virtual OpId ring_comm(OpName name, Phase phase, int step, OpBody body,
                         std::vector<OpId> deps) = 0;
  // Makes the next kernel wait for op.
  virtual void ring_wait(OpId op) = 0;
  // What the first K/V movement of a pass waits for: the producer of K/V (none for inputs).
  virtual std::vector<OpId> kv_producer() = 0;
  // The mesh rank at a position of the CP group, and the group.
  virtual int cp_rank(int cp_index) const = 0;
  virtual GroupId cp_group() const = 0;
  // A tensor slot of this rank (only called when the emission has tensors).
  virtual SlotId ring_slot(std::string name, DType dtype, std::vector<std::int64_t> shape,
                           std::vector<TokenRange> tokens) = 0;

 protected:
  ~RingEmitHost() = default;
};

// Names and types the two hosts print differently.
struct RingEmitStyle {
  bool tensors = true;                                // slots in kernel calls and transfers
  std::string out_cast = "out cast";                  // the forward's final cast
  std::string bwd_allgather = "kv all-gather (bwd)";  // the backward's K/V all-gather
  bool merge_in_storage_dtype = false;  // the step costs its lse merges in the storage dtype
};

class RingEmitter {
 public:
  RingEmitter(const RingAttentionConfig& config, int cp_index, RingEmitStyle style);

  // The forward over the ring; kernel_phase is bwd when recomputed (the K/V rotation stays
  // labelled fwd), prefix goes before every kernel's name ("recompute ").
  void forward(RingEmitHost& host, const RingTensors& t, Phase kernel_phase,
               const std::string& prefix) const;
  void backward(RingEmitHost& host, const RingTensors& t) const;

  // K/V elements one rank holds: 2 * b * (S / N) * H_kv * d.
  std::int64_t kv_elems() const { return kv_elems_; }
  std::int64_t q_elems() const { return q_elems_; }
  DType accumulator() const { return acc_; }

 private:
  struct KvRing {
    std::vector<SlotId> src;   // slot holding step i's K/V
    std::vector<OpId> arrive;  // op after which step i's K/V is present (-1 for step 0)
  };

  SlotId kv_slot(RingEmitHost& host, std::string name, DType dtype, int owner, int count) const;
  KvRing start_kv_ring(RingEmitHost& host, const RingTensors& t, Phase phase, Phase label) const;
  void kv_ring_step(RingEmitHost& host, KvRing& ring, int i, Phase phase) const;
  OpId rotation(RingEmitHost& host, OpName name, Phase phase, int step, SlotId send, SlotId recv,
                std::int64_t bytes, DType dtype, int tag, bool as_permute,
                std::vector<OpId> deps) const;
  KernelCall call(KernelKind kind, DType dtype, KernelShape shape, std::vector<SlotId> in,
                  std::vector<SlotId> out) const;
  AttentionShape rows(std::vector<TokenRange> q, std::vector<TokenRange> k) const;
  AttentionShape shape_of(const RingBlock& b) const;

  RingAttentionConfig cfg_;
  int r_, n_;
  RingEmitStyle style_;
  std::vector<RingBlock> blocks_;  // by ring step
  std::int64_t kv_elems_ = 0, q_elems_ = 0;
  DType acc_ = DType::fp32;
};

}  // namespace meshsim
