#include <doctest/doctest.h>

#include "tools/published_metrics.hpp"

using namespace meshsim;

namespace {

TransformerModel gpt22b() {
  TransformerModel m;
  m.name = "22B";
  m.layers = 48;
  m.hidden = 6144;
  m.heads = 64;
  m.kv_heads = 64;
  m.ffn_hidden = 4 * 6144;
  m.vocab = 51200;
  m.seq_len = 2048;
  return m;
}

StepPlan plan_of(int tp, std::int64_t gbs) {
  StepPlan p;
  p.tp = tp;
  p.global_batch = gbs;
  p.seq = 2048;
  return p;
}

}  // namespace

TEST_CASE("published FLOPs: the source's own formula") {
  const TransformerModel m = gpt22b();
  const StepPlan p = plan_of(8, 4);
  // 72 B s l h^2 (1 + s/(6h) + V/(12 l h)), B 4, s 2048, l 48, h 6144, V 51200:
  // 72 * 4 * 2048 * 48 * 6144^2 = 1.0685e15; (1 + 2048/36864 + 51200/3538944) = 1.0700
  const double b = 4, s = 2048, l = 48, h = 6144, v = 51200;
  const double korthikanti = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
  CHECK(published_model_flops("korthikanti2022", m, p) == doctest::Approx(korthikanti));
  CHECK(korthikanti == doctest::Approx(1.1433e15).epsilon(1e-3));
  const double narayanan = 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  CHECK(published_model_flops("megatron_readme_a100_2021", m, p) == doctest::Approx(narayanan));
  // Other sources: (6N + 12 l h s) per token, N the exact parameter count.
  const double n = static_cast<double>(count_parameters(m).total);
  CHECK(published_model_flops("llama3", m, p) == doctest::Approx(b * s * (6 * n + 12 * l * h * s)));
}

TEST_CASE("published metrics: each in its unit") {
  const StepPlan p = plan_of(8, 4);  // 8 GPUs
  const StepFigures f{2.0, 1e15, 312e12};
  CHECK(*published_metric("iteration_time", f, p) == 2.0);
  CHECK(*published_metric("step_time", f, p) == 2.0);
  CHECK(*published_metric("samples_per_gpu_per_sec", f, p) == doctest::Approx(4.0 / (2 * 8)));
  CHECK(*published_metric("tokens_per_sec_per_gpu", f, p) == doctest::Approx(4.0 * 2048 / 16));
  // 100 x 1e15 / (2 s x 8 GPUs x 312e12) = 20.03 %
  CHECK(*published_metric("MFU", f, p) == doctest::Approx(100 * 1e15 / (2 * 8 * 312e12)));
  CHECK(*published_metric("model_tflops_per_gpu", f, p) == doctest::Approx(1e15 / 16 / 1e12));
  CHECK_FALSE(published_metric("single_transformer_layer_fwd_plus_bwd_time", f, p));
}
