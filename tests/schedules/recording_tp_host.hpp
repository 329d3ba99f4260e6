#pragma once
// A TpEmitHost that records what the emitter asks for, shared by the TP emitter tests
// (test_tp_emitter, test_tp_emitter_quant, test_tp_emitter_overlap).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "schedules/tp_emitter.hpp"

namespace meshsim::test {

// Short op names, each field its own.
inline const TpNames kNames{"fwd",  "dgrad", "wgrad", "bias add", "bias grad", "xg",   "xg bwd",
                            "xg w", "dyg",   "y rs",  "y ar",     "dx rs",     "dx ar"};

struct RecordingHost final : TpEmitHost {
  struct Call {
    std::string name;
    std::vector<OpId> waits;  // what a kernel waited for
    std::int64_t bytes = 0;   // collectives
    GemmShape gemm;
    double kernel_bytes = 0;  // kernels: kernel_bytes() of the call
    QuantFormat quant = QuantFormat::none;
    double sm_share = 1.0;       // kernels
    bool userbuffers = false;    // a tp_userbuffers transfer
    bool after_compute = false;  // userbuffers: issued behind the last compute kernel
    int shift = 0;               // userbuffers: a permute's distance to the receiver
    CollectiveKind kind = CollectiveKind::all_reduce;
  };
  std::vector<Call> calls;
  std::vector<OpId> pending;

  OpId tp_kernel(std::string name, Phase, KernelCall call) override {
    Call c{std::move(name), pending, 0, {}, kernel_bytes(call), call.quant};
    c.sm_share = call.sm_share;
    if (const auto* g = std::get_if<GemmShape>(&call.shape)) c.gemm = *g;
    calls.push_back(std::move(c));
    pending.clear();
    return static_cast<OpId>(calls.size() - 1);
  }
  OpId tp_collective(std::string name, Phase, CollectiveKind, std::int64_t bytes, SlotId,
                     SlotId) override {
    calls.push_back({std::move(name), {}, bytes, {}, 0, QuantFormat::none});
    return static_cast<OpId>(calls.size() - 1);
  }
  OpId tp_userbuffers(std::string name, Phase, CollectiveKind kind, std::int64_t bytes,
                      bool after_compute, int shift) override {
    Call c{std::move(name), {}, bytes, {}, 0, QuantFormat::none};
    c.userbuffers = true;
    c.after_compute = after_compute;
    c.shift = shift;
    c.kind = kind;
    calls.push_back(std::move(c));
    return static_cast<OpId>(calls.size() - 1);
  }
  void tp_wait(OpId op) override {
    if (op >= 0) pending.push_back(op);
  }
  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const auto& c : calls) n.push_back(c.name);
    return n;
  }
  const Call& named(const std::string& name) const {
    for (const auto& c : calls) {
      if (c.name == name) return c;
    }
    FAIL("no op named " << name);
    return calls.front();
  }
};

}  // namespace meshsim::test
