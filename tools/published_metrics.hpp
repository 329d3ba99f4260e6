#pragma once
// A simulated step in the units a published run reports, each with the source's own definition:
//   iteration_time, step_time        step time, s
//   samples_per_gpu_per_sec          gbs / (step time x GPUs)
//   tokens_per_sec_per_gpu           gbs x seq / (step time x GPUs)
//   MFU (percent, %)                 100 x model FLOPs / (step time x GPUs x dense peak)
//   model_tflops_per_gpu (TFLOP/s)   model FLOPs / (step time x GPUs) / 1e12
// Model FLOPs per step follow the source:
//   korthikanti2022      72 B s l h^2 (1 + s/(6h) + V/(12 l h))   (Korthikanti et al. 2022, Sec. 6:
//                        the model FLOPs of Narayanan et al. 2021 without recomputation)
//   megatron_readme*     96 B s l h^2 (1 + s/(6h) + V/(16 l h))   (Narayanan et al. 2021, Eq. 3:
//                        full recomputation counted, as the 2021 README's TFLOP/s are)
//   anything else        (6 N + 12 l h s) per token               (the Llama 3 / PaLM convention)
// with B = gbs, s = seq, l = layers, h = hidden, V = vocab, N = parameters.
#include <optional>
#include <string>
#include <string_view>

#include "schedules/model_catalog.hpp"
#include "schedules/step_plan.hpp"

namespace meshsim {

double published_model_flops(std::string_view source, const TransformerModel& model,
                             const StepPlan& plan);

struct StepFigures {
  double step_time_s = 0;
  double model_flops = 0;  // per step (published_model_flops)
  double peak_flops = 0;   // one GPU's dense peak in the run's dtype
};

// Whether `metric` is one of the whole-step quantities above.
bool is_step_metric(std::string_view metric);
// The figure in `metric`'s unit, or nullopt for a metric that is not a whole-step quantity.
std::optional<double> published_metric(std::string_view metric, const StepFigures& step,
                                       const StepPlan& plan);

}  // namespace meshsim
