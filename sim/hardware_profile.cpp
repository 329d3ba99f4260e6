#include "sim/hardware_profile.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/hardware_profile_units.hpp"
#include "sim/json_fields.hpp"
#include "sim/kernel_call.hpp"
#include "sim/program.hpp"

namespace meshsim {

using nlohmann::json;

double interpolate_efficiency(const EfficiencyTable& table, double size) {
  if (table.empty()) return 1.0;
  // Clamped below (also for sizes log() cannot take) and above.
  if (!(size > table.front().size)) return table.front().efficiency;
  if (!(size < table.back().size)) return table.back().efficiency;
  // First point strictly larger than size; size lies in [hi - 1, hi).
  const auto hi = std::upper_bound(table.begin(), table.end(), size,
                                   [](double s, const EfficiencyPoint& p) { return s < p.size; });
  const auto lo = hi - 1;
  if (!(lo->size > 0) || !(hi->size > lo->size)) return lo->efficiency;
  const double t =
      (std::log(size) - std::log(lo->size)) / (std::log(hi->size) - std::log(lo->size));
  return lo->efficiency + t * (hi->efficiency - lo->efficiency);
}

namespace {

using namespace profile_units;

constexpr std::string_view kTopFields[] = {"schema_version",
                                           "name",
                                           "gpus_per_node",
                                           "gpus_per_host",
                                           "sm_count",
                                           "memory_gb",
                                           "peak_tflops",
                                           "memory_tbps",
                                           "launch_overhead_us",
                                           "host_op_us",
                                           "compute_efficiency",
                                           "memory_efficiency",
                                           "comm_interference",
                                           "network",
                                           "attention_kernels",
                                           "attention_kernel",
                                           "sources"};
constexpr std::string_view kAttentionKernelFields[] = {"attention_fwd", "attention_bwd"};
constexpr std::string_view kNetworkFields[] = {
    "nvlink_bus_gbps",         "nvls_bus_gbps",   "nic_gbps",
    "nics_per_node",           "base_latency_us", "nvlink_step_latency_us",
    "network_step_latency_us", "calibrated",      "collective_model"};
constexpr std::string_view kLinkFigureFields[] = {"base_latency_us", "step_latency_us", "bw_gbps"};

// Keys and values quoted in messages: control characters replaced, long text cut, so that an
// error stays on one line whatever the input.
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 48)) {
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  }
  if (s.size() > 48) out += "...";
  return out;
}

std::string describe_value(const json& v) {
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  if (v.is_string()) return fmt::format("\"{}\"", printable(v.get_ref<const std::string&>()));
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "null";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return v.type_name();
}

enum class Need { positive, non_negative, at_least_one };

std::string_view need_text(Need n) {
  switch (n) {
    case Need::positive:
      return "a positive number";
    case Need::non_negative:
      return "a non-negative number";
    case Need::at_least_one:
      return "a number >= 1";
  }
  return "a number";
}

class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void fail(std::string_view path, std::string_view what) const {
    throw InputError(fmt::format("{}: field '{}': {}", origin_, path, what));
  }
  [[noreturn]] void expected(std::string_view path, std::string_view what, const json& got) const {
    fail(path, fmt::format("expected {}, got {}", what, describe_value(got)));
  }

  const json& field(const json& obj, std::string_view path, std::string_view key,
                    std::string_view what) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail(path, fmt::format("missing (expected {})", what));
    return *it;
  }

  void reject_unknown(const json& obj, std::string_view prefix,
                      std::span<const std::string_view> known,
                      std::string_view noun = "field") const {
    for (const auto& [key, value] : obj.items()) {
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      std::string list;
      for (auto k : known) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
      fail(fmt::format("{}{}", prefix, printable(key)),
           fmt::format("unknown {} (expected one of {})", noun, list));
    }
  }

  double number(const json& obj, std::string_view prefix, std::string_view key, Need need,
                Unit unit) const {
    const std::string path = fmt::format("{}{}", prefix, key);
    const auto what = need_text(need);
    const json& v = field(obj, path, key, what);
    if (!v.is_number()) expected(path, what, v);
    const double human = v.get<double>();
    const bool ok = std::isfinite(human) && (need == Need::positive       ? human > 0
                                             : need == Need::non_negative ? human >= 0
                                                                          : human >= 1);
    if (!ok) expected(path, what, v);
    const double si = from_human(human, unit);
    if (!std::isfinite(si) || (need == Need::positive && !(si > 0))) {
      fail(path,
           fmt::format("expected {} of a representable size, got {}", what, describe_value(v)));
    }
    return si;
  }

  int positive_int(const json& obj, std::string_view prefix, std::string_view key) const {
    const std::string path = fmt::format("{}{}", prefix, key);
    constexpr std::string_view what = "a positive integer";
    const json& v = field(obj, path, key, what);
    if (!v.is_number()) expected(path, what, v);
    const double d = v.get<double>();
    if (!(d >= 1 && d <= static_cast<double>(INT_MAX) && d == std::floor(d))) {
      expected(path, what, v);
    }
    return static_cast<int>(d);
  }

  EfficiencyTable table(const json& v, const std::string& path) const {
    constexpr std::string_view what = "a non-empty array of [size, efficiency] pairs";
    if (!v.is_array() || v.empty()) expected(path, what, v);
    EfficiencyTable t;
    t.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      const json& p = v[i];
      const std::string at = fmt::format("{}[{}]", path, i);
      if (!p.is_array() || p.size() != 2) expected(at, "a [size, efficiency] pair", p);
      const json& s = p[0];
      const json& e = p[1];
      const double size = s.is_number() ? s.get<double>() : 0.0;
      if (!s.is_number() || !std::isfinite(size) || !(size > 0)) {
        expected(at + "[0]", "a positive size", s);
      }
      if (!t.empty() && !(size > t.back().size)) {
        expected(at + "[0]",
                 fmt::format("a size larger than the previous point's {} (sizes strictly "
                             "increasing)",
                             t.back().size),
                 s);
      }
      const double eff = e.is_number() ? e.get<double>() : 0.0;
      if (!e.is_number() || !(eff > 0 && eff <= 1)) {
        expected(at + "[1]", "an efficiency in (0, 1]", e);
      }
      t.push_back(EfficiencyPoint{size, eff});
    }
    return t;
  }

 private:
  std::string origin_;
};

// The profile is an object of this meshsim's schema_version, with no fields but the known ones.
void check_profile_header(const json& j, const Reader& r, std::string_view origin) {
  if (!j.is_object()) {
    throw InputError(fmt::format("{}: expected a JSON object (a hardware profile), got {}", origin,
                                 describe_value(j)));
  }
  {
    const auto want = fmt::format("{}", kHardwareSchemaVersion);
    const json& v = r.field(j, "schema_version", "schema_version", want);
    if (!v.is_number() || v.get<double>() != kHardwareSchemaVersion) {
      r.expected("schema_version", want, v);
    }
  }
  r.reject_unknown(j, "", kTopFields);
}

std::string profile_name(const json& j, const Reader& r) {
  const json& v = r.field(j, "name", "name", "a non-empty string");
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    r.expected("name", "a non-empty string", v);
  }
  return v.get<std::string>();
}

// "peak_tflops": one figure per dtype, nothing else.
void read_peak_flops(const json& j, const Reader& r, HardwareProfile& hw) {
  constexpr std::string_view what =
      "an object with bf16, fp16, fp32 and fp64 TFLOP/s (and optionally fp8, fp4)";
  const json& v = r.field(j, "peak_tflops", "peak_tflops", what);
  if (!v.is_object()) r.expected("peak_tflops", what, v);
  std::vector<std::string_view> names;
  for (DType t : kDTypes) names.push_back(to_string(t));
  names.push_back("fp8");
  names.push_back("fp4");
  r.reject_unknown(v, "peak_tflops.", names);
  for (DType t : kDTypes) {
    hw.peak_flops[static_cast<std::size_t>(t)] =
        r.number(v, "peak_tflops.", to_string(t), Need::positive, kUnitTera);
  }
  if (v.contains("fp8"))
    hw.fp8_flops = r.number(v, "peak_tflops.", "fp8", Need::positive, kUnitTera);
  if (v.contains("fp4"))
    hw.fp4_flops = r.number(v, "peak_tflops.", "fp4", Need::positive, kUnitTera);
}

// "compute_efficiency": a table per kernel kind (or kind with a fused function), and "default".
void read_compute_efficiency(const json& j, const Reader& r, HardwareProfile& hw) {
  constexpr std::string_view what =
      "an object of efficiency tables by kernel kind, with a \"default\" table";
  const json& v = r.field(j, "compute_efficiency", "compute_efficiency", what);
  if (!v.is_object()) r.expected("compute_efficiency", what, v);
  // Kinds, and kinds with a fused function ("gemm.gelu"): a calibrated profile's keys.
  std::vector<std::string> keys;
  for (int k = 0; k < kKernelKindCount; ++k) {
    const auto kind = to_string(static_cast<KernelKind>(k));
    keys.emplace_back(kind);
    for (int f = 1; f < kElementwiseFnCount; ++f) {
      keys.push_back(fmt::format("{}.{}", kind, to_string(static_cast<ElementwiseFn>(f))));
    }
  }
  keys.emplace_back(kGemmFp8EfficiencyKey);
  keys.emplace_back("default");
  const std::vector<std::string_view> names(keys.begin(), keys.end());
  r.reject_unknown(v, "compute_efficiency.", names, "kernel kind");
  if (!v.contains("default")) {
    r.fail("compute_efficiency.default",
           "missing (expected the table for kernel kinds not listed)");
  }
  for (const auto& [key, table] : v.items()) {
    hw.compute_efficiency[key] = r.table(table, "compute_efficiency." + key);
  }
}

// "network.calibrated": fitted figures per "<op>.<nvlink|network>".
void read_calibrated_links(const json& v, const Reader& r, NetworkProfile& n) {
  const json& c = v["calibrated"];
  constexpr std::string_view cwhat = "an object of \"<op>.<nvlink|network>\" figures";
  if (!c.is_object()) r.expected("network.calibrated", cwhat, c);
  for (const auto& [key, f] : c.items()) {
    const std::string prefix = fmt::format("network.calibrated.{}.", key);
    const auto dot = key.rfind('.');
    const std::string op = dot == std::string::npos ? key : key.substr(0, dot);
    const std::string link = dot == std::string::npos ? "" : key.substr(dot + 1);
    if ((op != "p2p" && !parse_collective_kind(op)) || (link != "nvlink" && link != "network")) {
      r.fail("network.calibrated." + key,
             "unknown key (expected <op>.<nvlink|network>, op p2p or a collective kind)");
    }
    if (!f.is_object()) r.expected(prefix.substr(0, prefix.size() - 1), "an object", f);
    r.reject_unknown(f, prefix, kLinkFigureFields);
    n.calibrated[key] =
        LinkFigures{r.number(f, prefix, "base_latency_us", Need::non_negative, kUnitMicro),
                    r.number(f, prefix, "step_latency_us", Need::non_negative, kUnitMicro),
                    r.number(f, prefix, "bw_gbps", Need::positive, kUnitGiga)};
  }
}

// "network": the link bandwidths and latencies, and the calibrated figures if any.
void read_network(const json& j, const Reader& r, NetworkProfile& n) {
  constexpr std::string_view what = "an object with the network figures";
  const json& v = r.field(j, "network", "network", what);
  if (!v.is_object()) r.expected("network", what, v);
  r.reject_unknown(v, "network.", kNetworkFields);
  n.nvlink_bus_bw = r.number(v, "network.", "nvlink_bus_gbps", Need::positive, kUnitGiga);
  n.nvls_bus_bw = r.number(v, "network.", "nvls_bus_gbps", Need::non_negative, kUnitGiga);
  n.nic_bw = r.number(v, "network.", "nic_gbps", Need::positive, kUnitGiga);
  n.nics_per_node = r.positive_int(v, "network.", "nics_per_node");
  n.base_latency = r.number(v, "network.", "base_latency_us", Need::non_negative, kUnitMicro);
  n.nvlink_step_latency =
      r.number(v, "network.", "nvlink_step_latency_us", Need::non_negative, kUnitMicro);
  n.network_step_latency =
      r.number(v, "network.", "network_step_latency_us", Need::non_negative, kUnitMicro);
  if (v.contains("calibrated")) read_calibrated_links(v, r, n);
  if (v.contains("collective_model")) {
    const json& m = v["collective_model"];
    constexpr std::string_view mwhat = "\"nccl\" or \"alpha-beta\"";
    if (!m.is_string() || (m != "nccl" && m != "alpha-beta")) {
      r.expected("network.collective_model", mwhat, m);
    }
    n.nccl_model = m == "nccl";
  }
}

// "attention_kernels", "attention_kernel" and "sources": optional.
void read_provenance(const json& j, const Reader& r, HardwareProfile& hw) {
  if (j.contains("attention_kernels")) {
    const json& v = j["attention_kernels"];
    if (!v.is_object()) r.expected("attention_kernels", "an object of kernel families", v);
    for (const auto& [family, tables] : v.items()) {
      const std::string at = "attention_kernels." + printable(family);
      if (!tables.is_object())
        r.expected(at, "an object with attention_fwd and attention_bwd", tables);
      r.reject_unknown(tables, at + ".", kAttentionKernelFields);
      hw.attention_kernels[family] = AttentionKernelTables{
          r.table(r.field(tables, at + ".attention_fwd", "attention_fwd", "a table"),
                  at + ".attention_fwd"),
          r.table(r.field(tables, at + ".attention_bwd", "attention_bwd", "a table"),
                  at + ".attention_bwd")};
    }
  }
  if (j.contains("attention_kernel")) {
    const json& v = j["attention_kernel"];
    if (!v.is_string() || !hw.attention_kernels.contains(v.get<std::string>())) {
      r.expected("attention_kernel", "the name of one of attention_kernels", v);
    }
    hw.attention_kernel = v.get<std::string>();
  }
  if (j.contains("sources")) {
    const json& v = j["sources"];
    if (!v.is_object()) r.expected("sources", "an object of source texts by field", v);
    for (const auto& [field, text] : v.items()) {
      if (!text.is_string()) r.expected("sources." + printable(field), "a string", text);
      hw.sources[field] = text.get<std::string>();
    }
  }
}

HardwareProfile parse_profile(const json& j, const Reader& r, std::string_view origin) {
  check_profile_header(j, r, origin);
  HardwareProfile hw;
  hw.name = profile_name(j, r);
  hw.gpus_per_node = r.positive_int(j, "", "gpus_per_node");
  if (j.contains("gpus_per_host")) hw.gpus_per_host = r.positive_int(j, "", "gpus_per_host");
  if (j.contains("sm_count")) hw.sm_count = r.positive_int(j, "", "sm_count");
  hw.memory_bytes = r.number(j, "", "memory_gb", Need::positive, kUnitGiga);
  read_peak_flops(j, r, hw);
  hw.memory_bw = r.number(j, "", "memory_tbps", Need::positive, kUnitTera);
  hw.launch_overhead = r.number(j, "", "launch_overhead_us", Need::non_negative, kUnitMicro);
  if (j.contains("host_op_us")) {
    hw.host_op = r.number(j, "", "host_op_us", Need::non_negative, kUnitMicro);
  }
  read_compute_efficiency(j, r, hw);
  {
    constexpr std::string_view what = "a non-empty array of [bytes, efficiency] pairs";
    hw.memory_efficiency =
        r.table(r.field(j, "memory_efficiency", "memory_efficiency", what), "memory_efficiency");
  }
  hw.comm_interference = r.number(j, "", "comm_interference", Need::at_least_one, kUnitOne);
  read_network(j, r, hw.network);
  read_provenance(j, r, hw);
  return hw;
}

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

HardwareProfile hardware_from_json(const json& j, std::string_view origin) {
  const Reader reader(origin);
  try {
    return parse_profile(j, reader, origin);
  } catch (const json::exception& e) {
    // Every access above is checked first; this only keeps the one-error-type promise.
    throw InputError(
        fmt::format("{}: not a valid hardware profile: {}", origin, one_line(e.what())));
  }
}

HardwareProfile load_hardware(std::string_view name_or_path) {
  if (auto builtin = builtin_hardware(name_or_path)) return *std::move(builtin);
  const std::filesystem::path path{std::string(name_or_path)};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::string names;
    for (const auto& n : builtin_hardware_names()) {
      names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
    }
    throw InputError(
        fmt::format("{}: not a built-in hardware profile ({}) and not a readable JSON file",
                    name_or_path, names));
  }
  return hardware_from_json(parse_json_text(read_text_file(path.string()), name_or_path),
                            name_or_path);
}

}  // namespace meshsim
