#include "tools/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "sim/collective_bandwidth.hpp"

namespace meshsim {
namespace {

double ms(Nanos ns) {
  return static_cast<double>(ns) * 1e-6;
}

}  // namespace

// Per link class (NVLink ports, NICs, node uplinks, leaf spine links) and for the busiest ports:
// bytes carried, busy time and utilization (bytes / (capacity x makespan)).
nlohmann::ordered_json link_stats_json(const FlowPlan& flows, const Timeline& timeline) {
  struct Sum {
    double bytes = 0, capacity = 0, busy = 0, ports = 0;
  };
  std::map<std::string, Sum> classes;
  std::vector<std::size_t> order;
  for (std::size_t p = 0; p < flows.port_names.size(); ++p) {
    // A folded run's port stands for its orbit's ports: the class sums count the whole network.
    const double k = flows.port_multiplicity[p];
    auto& s = classes[FlowPlan::kLinkClassNames[flows.port_class[p]]];
    s.bytes += timeline.ports[p].bytes * k;
    s.busy += static_cast<double>(timeline.ports[p].busy) * k;
    s.capacity += flows.port_capacity[p] * k;
    s.ports += k;
    if (timeline.ports[p].bytes > 0) order.push_back(p);
  }
  const double span = std::max(ns_to_seconds(timeline.makespan), 1e-12);
  nlohmann::ordered_json j;
  auto by_class = nlohmann::ordered_json::object();
  for (const auto& [cls, s] : classes) {
    by_class[cls] = {{"ports", static_cast<std::int64_t>(std::llround(s.ports))},
                     {"bytes", s.bytes},
                     {"busy_s", s.busy * 1e-9},
                     {"utilization", s.bytes / (s.capacity * span)}};
  }
  j["by_class"] = by_class;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return timeline.ports[a].bytes > timeline.ports[b].bytes;
  });
  constexpr std::size_t kBusiest = 16;
  auto ports = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < order.size() && k < kBusiest; ++k) {
    const std::size_t p = order[k];
    auto by_cause = nlohmann::ordered_json::object();
    for (std::size_t c = 0; c < kFlowCauses; ++c) {
      const double b = timeline.ports[p].bytes_by_cause[c];
      if (b <= 0) continue;
      by_cause[c == kP2PCause ? std::string("p2p")
                              : std::string(to_string(static_cast<CollectiveKind>(c)))] = b;
    }
    ports.push_back({{"port", flows.port_names[p]},
                     {"bytes", timeline.ports[p].bytes},
                     {"bytes_by_cause", by_cause},
                     {"busy_s", ns_to_seconds(timeline.ports[p].busy)},
                     {"utilization", timeline.ports[p].bytes / (flows.port_capacity[p] * span)}});
  }
  j["busiest_ports"] = ports;
  return j;
}

nlohmann::ordered_json collective_bandwidth_json(const SimulationResult& r) {
  auto out = nlohmann::ordered_json::array();
  if (!r.flows) return out;
  for (const auto& c : collective_bandwidth(r.program, r.plan, *r.flows, r.timeline)) {
    out.push_back({{"dim", c.dim},
                   {"kind", to_string(c.kind)},
                   {"instances", c.instances},
                   {"bytes", c.bytes},
                   {"time_s", c.time_s},
                   {"busbw_GBps", c.busbw * 1e-9},
                   {"min_busbw_GBps", c.min_busbw * 1e-9},
                   {"alone_busbw_GBps", c.alone_busbw * 1e-9},
                   {"limited_by", c.limited_by}});
  }
  return out;
}

nlohmann::ordered_json report_json(const SimulationResult& r, const Provenance& p) {
  nlohmann::ordered_json j;
  j["schema_version"] = kReportSchemaVersion;
  j["meshsim_version"] = MESHSIM_VERSION;
  j["command"] = p.command_line;
  j["hardware"] = {{"name", p.hardware_name}, {"hash", p.hardware_hash}};
  j["program"] = r.program.description;
  j["single_queue"] = r.program.single_queue;
  j["makespan_s"] = ns_to_seconds(r.metrics.makespan);
  j["ops"] = r.program.ops.size();
  j["events"] = r.timeline.events;
  j["wall_s"] = r.wall_s;
  j["bytes_nvlink"] = r.metrics.bytes_nvlink;
  j["bytes_network"] = r.metrics.bytes_network;
  j["network"] = r.flows ? "flow" : "analytical";
  if (r.flows) {
    j["links"] = link_stats_json(*r.flows, r.timeline);
    j["collectives"] = collective_bandwidth_json(r);
  }
  auto cp = nlohmann::ordered_json::array();
  for (const auto& c : r.metrics.critical_path) {
    cp.push_back({{"category", c.category}, {"time_s", ns_to_seconds(c.time)}, {"ops", c.ops}});
  }
  j["critical_path"] = cp;
  auto ranks = nlohmann::ordered_json::array();
  for (const auto& m : r.metrics.ranks) {
    ranks.push_back({{"rank", m.rank},
                     {"coords", r.program.mesh.describe_rank(m.rank)},
                     {"ops", m.ops},
                     {"attn_pairs", m.attn_pairs},
                     {"compute_s", ns_to_seconds(m.compute)},
                     {"comm_s", ns_to_seconds(m.comm)},
                     {"exposed_comm_s", ns_to_seconds(m.exposed_comm)},
                     {"idle_s", ns_to_seconds(m.idle)},
                     {"bytes_sent", m.bytes_sent},
                     {"sends", m.sends},
                     {"collectives", m.collectives}});
  }
  j["ranks"] = ranks;
  return j;
}

std::string report_text(const SimulationResult& r, const Provenance& p) {
  const auto& m = r.metrics;
  std::string out =
      fmt::format("{}\nhardware {} ({} GPUs per node), {}\n\n", r.program.description,
                  p.hardware_name, r.program.mesh.gpus_per_node(),
                  r.program.single_queue ? "single hardware queue" : "several hardware queues");
  out += fmt::format("{:>5}  {:<12} {:>14} {:>11} {:>9} {:>11} {:>9} {:>10} {:>6}\n", "rank",
                     "coords", "attn pairs", "compute ms", "comm ms", "exposed ms", "idle ms",
                     "sent MB", "sends");
  const std::size_t n = m.ranks.size();
  constexpr std::size_t kShown = 8;
  for (std::size_t i = 0; i < n; ++i) {
    if (n > 4 * kShown && i == kShown) {
      out += fmt::format("{:>5}  ({} ranks not shown; --json lists every rank)\n", "...",
                         n - 2 * kShown);
      i = n - kShown;
    }
    const auto& rm = m.ranks[i];
    out += fmt::format(
        "{:>5}  {:<12} {:>14} {:>11.3f} {:>9.3f} {:>11.3f} {:>9.3f} {:>10.1f} {:>6}\n", rm.rank,
        r.program.mesh.describe_rank(rm.rank), rm.attn_pairs, ms(rm.compute), ms(rm.comm),
        ms(rm.exposed_comm), ms(rm.idle), static_cast<double>(rm.bytes_sent) * 1e-6, rm.sends);
  }
  out += fmt::format(
      "\nstep time {:.3f} ms   ({} ops, {} engine events, built and simulated in "
      "{:.3f} s)\n",
      ms(m.makespan), r.program.ops.size(), r.timeline.events, r.wall_s);
  out += "critical path:";
  for (const auto& c : m.critical_path) {
    const double share = m.makespan > 0
                             ? 100.0 * static_cast<double>(c.time) / static_cast<double>(m.makespan)
                             : 0.0;
    out += fmt::format("  {} {:.1f}% ({:.3f} ms, {} ops)", c.category, share, ms(c.time), c.ops);
  }
  out += "\n";
  return out;
}

}  // namespace meshsim
