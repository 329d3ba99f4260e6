#include "tests/fuzz/mutator.hpp"

#include <array>
#include <limits>

namespace meshsim::fuzz {
namespace {

using nlohmann::json;

// Every node of `doc` (pre-order), to pick one to change.
void collect(json& node, std::vector<json*>& out) {
  out.push_back(&node);
  if (node.is_object() || node.is_array()) {
    for (auto& child : node) collect(child, out);
  }
}

// The containers of `doc`, to remove or duplicate one of their members.
void containers(json& node, std::vector<json*>& out) {
  if (!node.is_object() && !node.is_array()) return;
  if (!node.empty()) out.push_back(&node);
  for (auto& child : node) containers(child, out);
}

}  // namespace

json Mutator::edge_value() {
  switch (below(16)) {
    case 0:
      return 0;
    case 1:
      return -1;
    case 2:
      return std::numeric_limits<std::int64_t>::max();
    case 3:
      return std::numeric_limits<std::int64_t>::min();
    case 4:
      return std::numeric_limits<std::uint64_t>::max();
    case 5:
      return 1e308;
    case 6:
      return 1e-300;
    case 7:
      return 0.5;
    case 8:
      return std::int64_t{1} << 40;
    case 9:
      return "";
    case 10:
      return "x";
    case 11:
      return nullptr;
    case 12:
      return true;
    case 13:
      return json::array();
    case 14:
      return json::object();
    default:
      return static_cast<std::int64_t>(below(70000));
  }
}

std::string Mutator::edge_text() {
  static const std::array<const char*, 22> kValues = {"0",
                                                      "-1",
                                                      "1",
                                                      "9223372036854775807",
                                                      "9223372036854775808",
                                                      "1e308",
                                                      "1e-300",
                                                      "",
                                                      "nan",
                                                      "inf",
                                                      "0.5",
                                                      "1099511627776",
                                                      "2,,4",
                                                      "2,4,",
                                                      ",",
                                                      "1:0",
                                                      "-",
                                                      "1K:1G",
                                                      "65536",
                                                      "4G",
                                                      "abc",
                                                      "=="};
  return kValues[below(kValues.size())];
}

void Mutator::mutate_node(json& doc) {
  if (below(3) == 0) {
    std::vector<json*> holders;
    containers(doc, holders);
    if (!holders.empty()) {
      json& c = *holders[below(holders.size())];
      const std::size_t i = below(c.size());
      if (c.is_object()) {
        auto it = c.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(i));
        if (below(2) == 0) {
          c.erase(it);
        } else {
          c["unknown_" + std::to_string(below(10))] = edge_value();
        }
      } else if (below(2) == 0) {
        c.erase(i);
      } else {
        c.push_back(c[i]);
      }
      return;
    }
  }
  std::vector<json*> nodes;
  collect(doc, nodes);
  json& target = *nodes[below(nodes.size())];
  if (target.is_number_integer() && below(2) == 0) {
    // Wrapping arithmetic (unsigned, converted back modulo 2^64 as C++20 defines): the fuzzer
    // itself must not overflow on the edge values it planted.
    const auto v = target.get<std::int64_t>();
    const auto u = static_cast<std::uint64_t>(v);
    const std::array<std::uint64_t, 6> nearby = {
        u + 1, u - 1, u * 2, 0 - u, static_cast<std::uint64_t>(v / 2), u * 1000};
    target = static_cast<std::int64_t>(nearby[below(nearby.size())]);
  } else {
    target = edge_value();
  }
}

std::string Mutator::mutate_binary(std::string bytes) {
  for (std::uint64_t n = 1 + below(3); n > 0; --n) bytes = mutate_bytes(std::move(bytes));
  return bytes;
}

std::string Mutator::mutate_bytes(std::string text) {
  if (text.empty()) return edge_text();
  const std::size_t at = below(text.size());
  switch (below(5)) {
    case 0:
      text[at] = static_cast<char>(text[at] ^ (1 << below(8)));
      break;
    case 1:
      text.erase(at, 1 + below(16));
      break;
    case 2:
      text.insert(at, edge_text());
      break;
    case 3:
      text.insert(at, text.substr(at, 1 + below(32)));
      break;
    default:
      text.resize(at);
  }
  return text;
}

std::string Mutator::mutate_json(const json& doc, const std::string& text) {
  if (below(5) == 0) {
    std::string out = text;
    for (std::uint64_t n = 1 + below(3); n > 0; --n) out = mutate_bytes(std::move(out));
    return out;
  }
  json copy = doc;
  for (std::uint64_t n = 1 + below(4); n > 0; --n) mutate_node(copy);
  return copy.dump();
}

std::vector<std::string> Mutator::mutate_argv(std::vector<std::string> argv,
                                              const std::vector<std::string>& vocabulary) {
  for (std::uint64_t n = 1 + below(3); n > 0; --n) {
    const std::size_t i = argv.empty() ? 0 : 1 + below(argv.size() - 1);  // argv[0]: the command
    switch (below(6)) {
      case 0:
      case 1:
        if (i < argv.size()) argv[i] = edge_text();
        break;
      case 2:
        if (i < argv.size()) argv.erase(argv.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      case 3:
        if (i < argv.size()) argv.insert(argv.begin() + static_cast<std::ptrdiff_t>(i), argv[i]);
        break;
      case 4:
        if (i + 1 < argv.size() && argv[i].starts_with("--")) {
          argv[i] += "=" + edge_text();
          argv.erase(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        }
        break;
      default:
        if (!vocabulary.empty()) {
          argv.push_back(vocabulary[below(vocabulary.size())]);
          argv.push_back(edge_text());
        }
    }
  }
  return argv;
}

}  // namespace meshsim::fuzz
