#include <doctest/doctest.h>

#include <vector>

#include "sim/flow_network.hpp"

using namespace meshsim;

namespace {

// Runs every gang from time 0 and returns each one's completion time, by tag.
std::vector<Nanos> finish_times(FlowNetwork& net, const std::vector<GangFlow>& gangs) {
  for (std::size_t i = 0; i < gangs.size(); ++i)
    net.start(static_cast<std::int32_t>(i), gangs[i], 0);
  std::vector<Nanos> at(gangs.size(), -1);
  std::vector<std::int32_t> done;
  while (net.next_completion() != FlowNetwork::kNever) {
    const Nanos t = net.next_completion();
    done.clear();
    net.finish_due(t, done);
    for (auto tag : done) at[static_cast<std::size_t>(tag)] = t;
  }
  return at;
}

}  // namespace

TEST_CASE("one flow runs at the port's capacity") {
  FlowNetwork net({1e9});  // 1 byte per ns
  GangFlow g{{{0, 1.0}}, 5000, 0};
  CHECK(finish_times(net, {g})[0] == 5000);  // 5000 bytes / 1 byte/ns
}

TEST_CASE("two flows on one port share it; the survivor speeds up") {
  FlowNetwork net({1e9});
  GangFlow small{{{0, 1.0}}, 1000, 0};
  GangFlow big{{{0, 1.0}}, 3000, 0};
  const auto t = finish_times(net, {small, big});
  // both at 0.5 B/ns: small done at 2000 (1000 B); big has 2000 B left, alone at 1 B/ns: 4000
  CHECK(t[0] == 2000);
  CHECK(t[1] == 4000);
  // bytes conserved on the port: 1000 + 3000
  CHECK(net.stats()[0].bytes == doctest::Approx(4000.0));
  CHECK(net.stats()[0].busy == 4000);
}

TEST_CASE("max-min fairness: a flow held back elsewhere leaves the rest to the others") {
  // Port 0 (1 B/ns) carries A and B; port 1 (0.25 B/ns) carries B only.
  // B is limited to 0.25 by port 1; A gets the remaining 0.75 of port 0.
  FlowNetwork net({1e9, 0.25e9});
  GangFlow a{{{0, 1.0}}, 750, 0};
  GangFlow b{{{0, 1.0}, {1, 1.0}}, 250, 0};
  const auto t = finish_times(net, {a, b});
  CHECK(t[0] == 1000);  // 750 / 0.75
  CHECK(t[1] == 1000);  // 250 / 0.25
}

TEST_CASE("a gang loads each port by its unit flows") {
  // Two unit flows of the gang cross port 0 (2 B/ns): rate per unit flow 1 B/ns.
  FlowNetwork net({2e9, 8e9});
  GangFlow g{{{0, 2.0}, {1, 1.0}}, 1000, 0};
  CHECK(finish_times(net, {g})[0] == 1000);
  CHECK(net.stats()[0].bytes == doctest::Approx(2000.0));  // 2 unit flows x 1000 B
  CHECK(net.stats()[1].bytes == doctest::Approx(1000.0));
}

TEST_CASE("a gang with nothing to move finishes at once") {
  FlowNetwork net({1e9});
  GangFlow barrier{{}, 0, 0};
  CHECK(finish_times(net, {barrier})[0] == 0);
}
