#include "tools/published_metrics.hpp"

namespace meshsim {

double published_model_flops(std::string_view source, const TransformerModel& model,
                             const StepPlan& plan) {
  const double b = static_cast<double>(plan.global_batch);
  const double s = static_cast<double>(step_seq(model, plan));
  const double l = model.layers, h = static_cast<double>(model.hidden);
  const double v = static_cast<double>(model.vocab);
  if (source == "korthikanti2022") {
    return 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
  }
  if (source.starts_with("megatron_readme")) {
    return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  }
  if (model.moe) {
    // A token multiplies through its k routed experts, not all E: 6 x the parameters it meets
    // (router, k routed and the shared experts, attention, head) + full attention, the model
    // FLOPs of meshsim step (Megatron-LM's num_floating_point_operations counts top-k experts
    // the same way).
    return b * s *
           training_flops_per_token(model, static_cast<std::int64_t>(s), AttentionFlops::full);
  }
  const double n = static_cast<double>(count_parameters(model).total);
  return b * s * (6 * n + 12 * l * h * s);
}

bool is_step_metric(std::string_view metric) {
  for (const char* m : {"iteration_time", "step_time", "samples_per_gpu_per_sec",
                        "tokens_per_sec_per_gpu", "MFU", "model_tflops_per_gpu"}) {
    if (metric == m) return true;
  }
  return false;
}

std::optional<double> published_metric(std::string_view metric, const StepFigures& step,
                                       const StepPlan& plan) {
  if (!is_step_metric(metric)) return std::nullopt;
  const double gpus = world_size(plan);
  const double t = step.step_time_s;
  const double samples = static_cast<double>(plan.global_batch);
  if (metric == "iteration_time" || metric == "step_time") return t;
  if (metric == "samples_per_gpu_per_sec") return samples / (t * gpus);
  if (metric == "tokens_per_sec_per_gpu") {
    return samples * static_cast<double>(plan.seq) / (t * gpus);
  }
  if (metric == "MFU") return 100 * step.model_flops / (t * gpus * step.peak_flops);
  if (metric == "model_tflops_per_gpu") return step.model_flops / (t * gpus) / 1e12;
  return std::nullopt;
}

}  // namespace meshsim
