#pragma once
// Ring attention (context parallelism), ARCHITECTURE.md §4.1: the forward and backward of causal or
// full attention over a sequence split across N ranks, K/V rotated by p2p exchanges, one all-gather
// or per-step permutations, partial outputs merged by log-sum-exp, and dK/dV accumulated around a
// second ring in fp32.
#include <cstdint>
#include <optional>
#include <string_view>

#include "sim/dtype.hpp"
#include "sim/program.hpp"

namespace meshsim {

enum class RingVariant : std::uint8_t { ring, zigzag };
enum class KvRotation : std::uint8_t { p2p, all_gather, all_to_all };
enum class AttentionPass : std::uint8_t { fwd, bwd, fwd_bwd };

std::string_view to_string(RingVariant v);
std::string_view to_string(KvRotation r);
std::string_view to_string(AttentionPass p);
std::optional<RingVariant> parse_ring_variant(std::string_view s);
std::optional<KvRotation> parse_kv_rotation(std::string_view s);
std::optional<AttentionPass> parse_attention_pass(std::string_view s);

struct RingAttentionConfig {
  int cp = 8;
  std::int64_t seq = 131072;  // whole sequence S; each rank holds S / cp tokens
  std::int64_t batch = 1;
  std::int64_t heads = 32;
  std::int64_t kv_heads = 8;
  std::int64_t head_dim = 128;
  DType dtype = DType::bf16;
  RingVariant variant = RingVariant::zigzag;
  KvRotation kv_rotation = KvRotation::p2p;
  bool causal = true;
  AttentionPass pass = AttentionPass::fwd_bwd;
  int gpus_per_node = 8;
  bool single_queue = true;  // CUDA_DEVICE_MAX_CONNECTIONS=1 (the default when CP > 1)
  // The Program names the tensor slots its kernels and transfers read and write, as `validate`
  // needs to run it. Simulating it does not read them (ops, shapes and timing are the same
  // without): `meshsim ring-attention` leaves them out unless it saves the Program.
  bool tensor_slots = true;
};

// The largest ring a Program is built for (`--cp`).
inline constexpr int kMaxRingCp = 1024;

// Throws InputError naming the option (by its CLI flag) when the configuration is impossible.
void check_config(const RingAttentionConfig& config);

// K/V bytes one rank holds: 2 * b * (S / N) * H_kv * d * e.
std::int64_t kv_bytes_per_rank(const RingAttentionConfig& config);

// The token positions rank r holds, in local order (ring: one range; zigzag: chunk r, then chunk
// 2N-1-r).
std::vector<TokenRange> rank_tokens(const RingAttentionConfig& config, int rank);

Program build_ring_attention(const RingAttentionConfig& config);

}  // namespace meshsim
