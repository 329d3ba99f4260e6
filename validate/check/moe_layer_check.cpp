#include "validate/check/moe_layer_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/reference/moe_layer.hpp"
#include "sim/error.hpp"

namespace meshsim {

namespace {

void put(std::vector<double>& out, const std::vector<double>& v) {
  out.push_back(static_cast<double>(v.size()));
  out.insert(out.end(), v.begin(), v.end());
}

std::vector<double> take(const std::vector<double>& in, std::size_t& at) {
  MESHSIM_CHECK(at < in.size(), "truncated MoE result");
  const auto n = static_cast<std::size_t>(in[at++]);
  MESHSIM_CHECK(at + n <= in.size(), "truncated MoE result");
  std::vector<double> v(in.begin() + static_cast<std::ptrdiff_t>(at),
                        in.begin() + static_cast<std::ptrdiff_t>(at + n));
  at += n;
  return v;
}

GlobalTensorData tensor(const MoeLayerConfig& c, std::string name, DType dtype) {
  GlobalTensorData t;
  t.shape = moe_tensor_shape(c, name);
  t.name = std::move(name);
  t.dtype = dtype;
  std::int64_t n = 1;
  for (const std::int64_t d : t.shape) n *= d;
  t.values.assign(static_cast<std::size_t>(n), 0.0);
  t.elements_written = n;
  return t;
}

GlobalTensorData input(const MoeLayerConfig& c, std::uint64_t seed, const std::string& name) {
  GlobalTensorData t = tensor(c, name, c.dtype);
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    t.values[i] = moe_input_value(c, seed, name, static_cast<std::int64_t>(i));
  }
  return t;
}

// Rank r's shard `part` placed at its global indices (added: dw_router is a sum over ranks).
void place(const MoeLayerConfig& c, const std::string& input_name, int rank,
           const std::vector<double>& part, GlobalTensorData& t, bool add) {
  const std::vector<std::int64_t> idx = moe_shard_indices(c, input_name, rank);
  MESHSIM_CHECK(idx.size() == part.size(), "a rank's MoE result has the wrong size");
  for (std::size_t i = 0; i < idx.size(); ++i) {
    double& v = t.values[static_cast<std::size_t>(idx[i])];
    v = add ? v + part[i] : part[i];
  }
}

const std::vector<double>& values_of(const std::vector<GlobalTensorData>& t, const char* name) {
  return find_tensor(t, name).values;
}

// Counts that must agree exactly (tolerance 0; the error is the largest difference).
TensorNumerics exact_counts(const GlobalTensorData& got, const std::vector<double>& want) {
  MESHSIM_CHECK(got.values.size() == want.size(), "count tensors of different sizes");
  TensorNumerics n;
  n.tensor = got.name;
  n.dtype = DType::fp64;
  for (std::size_t i = 0; i < want.size(); ++i) {
    n.max_abs_error = std::max(n.max_abs_error, std::abs(got.values[i] - want[i]));
  }
  n.max_rel_error = n.max_abs_error;
  n.pass = n.max_abs_error == 0;
  return n;
}

}  // namespace

std::vector<std::byte> pack_moe_result(const MoeRankResult& r) {
  std::vector<double> all;
  for (const auto* v : {&r.y, &r.dx, &r.dw_router, &r.dw_up, &r.dw_down}) put(all, *v);
  put(all, {r.tokens_per_expert.begin(), r.tokens_per_expert.end()});
  put(all, {r.routed_per_expert.begin(), r.routed_per_expert.end()});
  put(all, {static_cast<double>(r.dropped)});
  std::vector<double> times;
  for (const auto& p : r.phases) {
    times.push_back(static_cast<double>(p.start_ns));
    times.push_back(static_cast<double>(p.end_ns));
  }
  put(all, times);
  std::vector<std::byte> bytes(all.size() * sizeof(double));
  std::memcpy(bytes.data(), all.data(), bytes.size());
  return bytes;
}

MoeRankResult unpack_moe_result(const MoeLayerConfig&, const std::vector<std::byte>& bytes,
                                const std::vector<MoePhaseTime>& names) {
  std::vector<double> all(bytes.size() / sizeof(double));
  std::memcpy(all.data(), bytes.data(), all.size() * sizeof(double));
  std::size_t at = 0;
  MoeRankResult r;
  for (auto* v : {&r.y, &r.dx, &r.dw_router, &r.dw_up, &r.dw_down}) *v = take(all, at);
  for (const double n : take(all, at)) r.tokens_per_expert.push_back(static_cast<std::int64_t>(n));
  for (const double n : take(all, at)) r.routed_per_expert.push_back(static_cast<std::int64_t>(n));
  r.dropped = static_cast<std::int64_t>(take(all, at).at(0));
  const std::vector<double> times = take(all, at);
  MESHSIM_CHECK(times.size() == 2 * names.size(), "ranks ran different MoE phases");
  for (std::size_t i = 0; i < names.size(); ++i) {
    r.phases.push_back({names[i].name, static_cast<std::int64_t>(times[2 * i]),
                        static_cast<std::int64_t>(times[2 * i + 1])});
  }
  return r;
}

std::vector<GlobalTensorData> assemble_moe_tensors(const MoeLayerConfig& c, std::uint64_t seed,
                                                   const std::vector<MoeRankResult>& per_rank) {
  std::vector<GlobalTensorData> out;
  for (const char* name : {"x", "w_router", "w_up", "w_down"}) out.push_back(input(c, seed, name));
  GlobalTensorData bias = tensor(c, "router_bias", DType::fp64);
  bias.values = routing_bias(c);
  out.push_back(std::move(bias));
  if (c.backward) out.push_back(input(c, seed, "dy"));
  GlobalTensorData y = tensor(c, "y", c.dtype), dx = tensor(c, "dx", c.dtype);
  GlobalTensorData dwr = tensor(c, "dw_router", c.dtype), dwu = tensor(c, "dw_up", c.dtype);
  GlobalTensorData dwd = tensor(c, "dw_down", c.dtype);
  GlobalTensorData counts = tensor(c, "tokens_per_expert", DType::fp64);
  GlobalTensorData dropped = tensor(c, "dropped", DType::fp64);
  for (int r = 0; r < static_cast<int>(per_rank.size()); ++r) {
    const MoeRankResult& p = per_rank[static_cast<std::size_t>(r)];
    place(c, "x", r, p.y, y, false);
    dropped.values[0] += static_cast<double>(p.dropped);
    for (std::size_t e = 0; e < p.tokens_per_expert.size(); ++e) {
      counts.values[e] += static_cast<double>(p.tokens_per_expert[e]);
    }
    if (!c.backward) continue;
    place(c, "x", r, p.dx, dx, false);
    place(c, "w_router", r, p.dw_router, dwr, true);
    place(c, "w_up", r, p.dw_up, dwu, false);
    place(c, "w_down", r, p.dw_down, dwd, false);
  }
  out.push_back(std::move(y));
  if (c.backward) {
    for (auto* t : {&dx, &dwr, &dwu, &dwd}) out.push_back(std::move(*t));
  }
  out.push_back(std::move(counts));
  out.push_back(std::move(dropped));
  return out;
}

NumericsReport check_moe_numerics(const MoeLayerConfig& c,
                                  const std::vector<GlobalTensorData>& tensors) {
  kernels::reference::MoeLayerDims d;
  d.tokens = c.tokens;
  d.hidden = c.hidden;
  d.ffn = c.ffn;
  d.experts = c.experts;
  d.top_k = c.top_k;
  d.capacity = expert_capacity(c);
  d.block_tokens = c.local_tokens();
  const std::vector<double> no_dy;
  const kernels::reference::MoeLayerTensors ref = kernels::reference::moe_layer(
      d, values_of(tensors, "x"), values_of(tensors, "w_router"), values_of(tensors, "router_bias"),
      values_of(tensors, "w_up"), values_of(tensors, "w_down"),
      c.backward ? values_of(tensors, "dy") : no_dy);
  NumericsReport report;
  report.tensors.push_back(compare_tensor(find_tensor(tensors, "y"), ref.y));
  if (c.backward) {
    report.tensors.push_back(compare_tensor(find_tensor(tensors, "dx"), ref.dx));
    report.tensors.push_back(compare_tensor(find_tensor(tensors, "dw_router"), ref.dw_router));
    report.tensors.push_back(compare_tensor(find_tensor(tensors, "dw_up"), ref.dw_up));
    report.tensors.push_back(compare_tensor(find_tensor(tensors, "dw_down"), ref.dw_down));
  }
  // The routing itself: token copies per expert and dropped must be the reference's exactly.
  std::vector<double> want(ref.tokens_per_expert.begin(), ref.tokens_per_expert.end());
  report.tensors.push_back(exact_counts(find_tensor(tensors, "tokens_per_expert"), want));
  report.tensors.push_back(
      exact_counts(find_tensor(tensors, "dropped"), {static_cast<double>(ref.dropped)}));
  report.pass = true;
  for (const auto& t : report.tensors) report.pass = report.pass && t.pass;
  return report;
}

}  // namespace meshsim
