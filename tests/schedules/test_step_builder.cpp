#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "schedules/training_step.hpp"
#include "sim/error.hpp"
#include "tests/schedules/tiny_models.hpp"

using namespace meshsim;

namespace {

// The name of the next op of the same rank after op `id`.
std::string prog_next_name(const Program& prog, int id) {
  const int rank = prog.ops[static_cast<std::size_t>(id)].rank;
  for (std::size_t i = static_cast<std::size_t>(id) + 1; i < prog.ops.size(); ++i) {
    if (prog.ops[i].rank == rank) return prog.ops[i].name.str();
  }
  return "";
}

// GPT-style model: h 64, 4 heads, f 256, V 512, seq 32, 2 layers, LayerNorm, biases, tied.
TransformerModel gpt_tiny() {
  TransformerModel m;
  m.name = "gpt-tiny";
  m.layers = 2;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 256;
  m.vocab = 512;
  m.seq_len = 32;
  m.gated_mlp = false;
  m.tied_embeddings = true;
  m.norm = NormKind::layernorm;
  m.linear_bias = true;
  m.position = PositionEmbedding::learned;
  return m;
}

// The optimizer-phase kernels of `prog` (pointers into it: it must outlive the result).
std::vector<const Op*> optimizer_ops(Program&&) = delete;
std::vector<const Op*> optimizer_ops(const Program& prog) {
  std::vector<const Op*> out;
  for (const Op& op : prog.ops) {
    if (op.labels.phase == Phase::optimizer && std::holds_alternative<KernelCall>(op.body)) {
      out.push_back(&op);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("step builder: fp16 unscales the fp32 gradients before the Adam step, bf16 does not") {
  StepPlan p;
  p.global_batch = 2;
  p.dtype = DType::bf16;
  const Program bf16_step = build_training_step(gpt_tiny(), p, 8);
  // The step's bookkeeping: the grad-buffer memset first, the grad norm before the Adam step.
  const auto bf16 = optimizer_ops(bf16_step);
  REQUIRE(bf16.size() == 3);
  CHECK(bf16[0]->name == "zero grad buffer");
  CHECK(bf16[1]->name == "grad norm");
  CHECK(bf16[2]->name == "optimizer step");
  p.dtype = DType::fp16;
  const Program fp16_step = build_training_step(gpt_tiny(), p, 8);
  const auto fp16 = optimizer_ops(fp16_step);
  REQUIRE(fp16.size() == 4);
  CHECK(fp16[1]->name == "unscale grads");
  CHECK(fp16[2]->name == "grad norm");
  const auto& unscale = std::get<KernelCall>(fp16[1]->body);
  const auto& adam = std::get<KernelCall>(fp16[3]->body);
  CHECK(unscale.kind == KernelKind::elementwise);
  CHECK(unscale.dtype == DType::fp32);  // the main gradients are fp32
  // Both run over the same parameters: every parameter of the rank (tp = pp = dp = 1).
  const std::int64_t n = count_parameters(gpt_tiny()).total;
  CHECK(std::get<VectorShape>(unscale.shape).elements == n);
  CHECK(std::get<VectorShape>(adam.shape).elements == n);
}

TEST_CASE("step builder: --overlap-param-gather moves the parameter all-gathers into the forward") {
  StepPlan p;
  p.dp = 2;
  p.global_batch = 4;
  p.distributed_optimizer = true;
  p.dp_buckets = 2;
  const TransformerModel m = gpt_tiny();  // 2 layers: one per bucket
  auto gathers = [](const Program& prog, Phase phase) {
    std::int64_t bytes = 0;
    int n = 0;
    for (const Op& op : prog.ops) {
      const auto* c = std::get_if<CollectiveCall>(&op.body);
      if (c == nullptr || c->kind != CollectiveKind::all_gather || op.labels.phase != phase) {
        continue;
      }
      bytes += c->bytes;
      ++n;
    }
    return std::pair{n, bytes};
  };
  const Program after_step = build_training_step(m, p, 8);
  p.overlap_param_gather = true;
  const Program overlapped = build_training_step(m, p, 8);
  // The same two buckets move the same bytes (every parameter once, bf16), only earlier.
  const auto [n_after, bytes_after] = gathers(after_step, Phase::optimizer);
  const auto [n_fwd, bytes_fwd] = gathers(overlapped, Phase::fwd);
  CHECK(n_after == 2);
  CHECK(n_fwd == 2);
  CHECK(gathers(overlapped, Phase::optimizer).first == 0);
  CHECK(bytes_fwd == bytes_after);
  CHECK(bytes_fwd == 2 * count_parameters(m).total);
  // The embedding (first kernel) waits for the bucket holding the first layer and the embedding
  // (bucket 1 in backward order), the second layer's first kernel for bucket 0.
  OpId bucket1 = -1, bucket0 = -1;
  for (std::size_t i = 0; i < overlapped.ops.size(); ++i) {
    if (overlapped.ops[i].name == "param all-gather c0 bucket 1") bucket1 = static_cast<OpId>(i);
    if (overlapped.ops[i].name == "param all-gather c0 bucket 0") bucket0 = static_cast<OpId>(i);
  }
  REQUIRE(bucket1 >= 0);
  REQUIRE(bucket0 >= 0);
  bool embedding_waits = false, layer1_waits = false;
  for (const Op& op : overlapped.ops) {
    const bool first_mb = op.labels.microbatch == 0 && op.labels.phase == Phase::fwd;
    const auto has = [&](OpId d) {
      const auto deps = overlapped.deps(op.id);
      return std::find(deps.begin(), deps.end(), d) != deps.end();
    };
    if (first_mb && op.name == "embedding" && has(bucket1)) embedding_waits = true;
    if (first_mb && op.labels.layer == 1 && has(bucket0)) layer1_waits = true;
  }
  CHECK(embedding_waits);
  CHECK(layer1_waits);
  // Without the distributed optimizer there is nothing to overlap.
  p.distributed_optimizer = false;
  CHECK_THROWS_AS(check_step_plan(m, p), InputError);
}

TEST_CASE("step builder: --no-overlap-grad-reduce reduces every bucket after the whole backward") {
  StepPlan p;
  p.dp = 2;
  p.global_batch = 4;
  p.dp_buckets = 2;  // 2 layers: one per bucket
  auto first_reduce_after_backward = [&](bool overlap) {
    p.overlap_grad_reduce = overlap;
    const Program prog = build_training_step(gpt_tiny(), p, 8);
    std::size_t last_backward = 0, first_reduce = prog.ops.size();
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      const Op& op = prog.ops[i];
      if (op.rank != 0) continue;
      const bool backward = op.labels.phase == Phase::bwd || op.labels.phase == Phase::wgrad;
      if (backward && std::holds_alternative<KernelCall>(op.body)) last_backward = i;
      const auto* c = std::get_if<CollectiveCall>(&op.body);
      if (c != nullptr && c->kind == CollectiveKind::all_reduce)
        first_reduce = std::min(first_reduce, i);
    }
    return first_reduce > last_backward;
  };
  // Overlapped (the default): the last layer's bucket (bucket 0) is reduced while the first
  // layer's backward still runs. Not overlapped: nothing before the backward has finished.
  CHECK_FALSE(first_reduce_after_backward(true));
  CHECK(first_reduce_after_backward(false));
}

TEST_CASE("step builder: the step zeroes the grad buffer and takes the grad norm over its shard") {
  auto vector_of = [](const Program& prog, const std::string& name, int rank) {
    for (const Op& op : prog.ops) {
      if (op.rank == rank && op.name == name) return std::get<KernelCall>(op.body);
    }
    FAIL("no op " << name);
    return KernelCall{};
  };
  StepPlan p = test::plan_of(1, 1, 1, 2, 4);
  p.distributed_optimizer = true;
  const Program prog = build_training_step(test::tiny_gqa_model(2), p, 8);
  // The optimizer updates ceil(params / dp) parameters; the memset covers all of the rank's
  // fp32 main gradients (4 bytes each, written once), the norm reads the shard's once.
  const auto adam = std::get<VectorShape>(vector_of(prog, "optimizer step", 0).shape);
  const KernelCall zero = vector_of(prog, "zero grad buffer", 0);
  const KernelCall norm = vector_of(prog, "grad norm", 0);
  CHECK(zero.dtype == DType::fp32);
  CHECK(norm.dtype == DType::fp32);
  const auto params = std::get<VectorShape>(zero.shape).elements;
  CHECK(adam.elements == (params + 1) / 2);
  CHECK(std::get<VectorShape>(norm.shape) == VectorShape{adam.elements, 1, 0});
  CHECK(kernel_bytes(zero) == doctest::Approx(4.0 * static_cast<double>(params)));
  // The memset is the rank's first op; the norm runs just before the optimizer step.
  int first = -1, norm_id = -1, adam_id = -1;
  for (const Op& op : prog.ops) {
    if (op.rank != 0) continue;
    if (first < 0) first = op.id;
    if (op.name == "grad norm") norm_id = op.id;
    if (op.name == "optimizer step") adam_id = op.id;
  }
  CHECK(prog.ops[static_cast<std::size_t>(first)].name == "zero grad buffer");
  CHECK(norm_id + 1 == adam_id);
}

TEST_CASE("step builder: gradients kept and reduced in bf16 without grad_reduce_in_fp32") {
  auto find = [](const Program& prog, const std::string& prefix, int rank) -> const Op* {
    for (const Op& op : prog.ops) {
      if (op.rank == rank && op.name.rfind(prefix, 0) == 0) return &op;
    }
    return nullptr;
  };
  StepPlan p = test::plan_of(1, 1, 1, 2, 4);
  p.distributed_optimizer = true;
  const Program fp32 = build_training_step(test::tiny_gqa_model(2), p, 8);
  p.grad_reduce_in_fp32 = false;
  const Program bf16 = build_training_step(test::tiny_gqa_model(2), p, 8);
  // The DDP buffer in the parameters' dtype: the memset writes 2 bytes per parameter, and every
  // bucket's reduce-scatter moves half the bytes (Megatron-Core: grad_dtype = param.dtype).
  const auto& zero32 = std::get<KernelCall>(find(fp32, "zero grad buffer", 0)->body);
  const auto& zero16 = std::get<KernelCall>(find(bf16, "zero grad buffer", 0)->body);
  CHECK(zero16.dtype == DType::bf16);
  CHECK(kernel_bytes(zero16) == doctest::Approx(kernel_bytes(zero32) / 2));
  const Op* rs32 = find(fp32, "grad reduce-scatter", 0);
  const Op* rs16 = find(bf16, "grad reduce-scatter", 0);
  REQUIRE(rs32 != nullptr);
  REQUIRE(rs16 != nullptr);
  const auto& c32 = std::get<CollectiveCall>(rs32->body);
  const auto& c16 = std::get<CollectiveCall>(rs16->body);
  CHECK(c16.bytes * 2 == c32.bytes);
  CHECK(c16.dtype == DType::bf16);
  // Before the norm, the optimizer copies its shard into fp32 main grads: read 2, write 4 bytes
  // per parameter of the shard (the optimizer step's elements).
  CHECK(find(fp32, "copy grads to main", 0) == nullptr);
  const Op* copy = find(bf16, "copy grads to main", 0);
  REQUIRE(copy != nullptr);
  const auto adam =
      std::get<VectorShape>(std::get<KernelCall>(find(bf16, "optimizer step", 0)->body).shape);
  CHECK(kernel_bytes(std::get<KernelCall>(copy->body)) ==
        doctest::Approx(6.0 * static_cast<double>(adam.elements)));
  CHECK(prog_next_name(bf16, copy->id) == "grad norm");
}

TEST_CASE("step builder: FP8 parameters are cast after the step and all-gathered in FP8") {
  auto find = [](const Program& prog, const std::string& name, int rank) -> const Op* {
    for (const Op& op : prog.ops) {
      if (op.rank == rank && op.name == name) return &op;
    }
    return nullptr;
  };
  StepPlan p = test::plan_of(1, 1, 1, 2, 4);
  p.distributed_optimizer = true;
  p.precision = Precision::fp8_current;
  const TransformerModel m = test::tiny_gqa_model(2);
  const Program cast = build_training_step(m, p, 8);
  p.fp8_param_gather = true;
  const Program fp8 = build_training_step(m, p, 8);
  // The layers' linear weights of this rank (tp 1): (attention + MLP) of 2 layers.
  const ParameterCount pc = count_parameters(m);
  const std::int64_t linear = 2 * (pc.attention + pc.mlp);
  const std::int64_t shard = (linear + 1) / 2;  // over dp 2
  // After the optimizer step: the shard's amax (fp32 read), its all-reduce over dp, the cast of
  // the fp32 master shard into FP8 (read 4, write 1 byte per element).
  REQUIRE(find(fp8, "fp8 param cast", 0) != nullptr);
  const auto& c = std::get<KernelCall>(find(fp8, "fp8 param cast", 0)->body);
  CHECK(kernel_bytes(c) == doctest::Approx(5.0 * static_cast<double>(shard)));
  CHECK(find(fp8, "fp8 param amax", 0) != nullptr);
  CHECK(find(fp8, "fp8 param amax all-reduce", 0) != nullptr);
  CHECK(find(cast, "fp8 param cast", 0) == nullptr);
  // The post-step all-gathers: 1 byte per linear weight instead of 2, the rest unchanged.
  std::int64_t bytes_cast = 0, bytes_fp8 = 0;
  for (const Op& op : cast.ops) {
    if (op.rank == 0 && op.name.rfind("param all-gather", 0) == 0) {
      bytes_cast += std::get<CollectiveCall>(op.body).bytes;
    }
  }
  for (const Op& op : fp8.ops) {
    if (op.rank == 0 && op.name.rfind("param all-gather", 0) == 0) {
      bytes_fp8 += std::get<CollectiveCall>(op.body).bytes;
    }
  }
  CHECK(bytes_cast - bytes_fp8 == linear);
  // The forward builds each weight's transpose instead of casting it: 2 bytes per element moved
  // (1 in, 1 out) where the cast read 2 and wrote 2 copies of 1.
  CHECK(find(fp8, "qkv w transpose", 0) != nullptr);
  CHECK(find(fp8, "qkv w cast", 0) == nullptr);
  CHECK(find(cast, "qkv w cast", 0) != nullptr);
}
