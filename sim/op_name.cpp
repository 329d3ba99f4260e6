#include "sim/op_name.hpp"

#include <memory>
#include <mutex>
#include <ostream>
#include <unordered_map>

namespace meshsim {
namespace {

// The process's names, each stored once; keys view their own stored string. Never destroyed: an
// Op in a static outlives any destruction order.
struct NamePool {
  std::mutex mutex;
  std::unordered_map<std::string_view, std::unique_ptr<const std::string>> names;
};

NamePool& pool() {
  static auto* p = new NamePool;
  return *p;
}

const std::string* intern(std::string_view text) {
  // Each thread remembers the names it has seen: a builder repeats a few dozen names per Program,
  // so the shared pool (and its lock) is met once per name and thread.
  thread_local std::unordered_map<std::string_view, const std::string*> seen;
  if (const auto it = seen.find(text); it != seen.end()) return it->second;
  NamePool& p = pool();
  const std::string* stored = nullptr;
  {
    const std::lock_guard<std::mutex> lock(p.mutex);
    auto it = p.names.find(text);
    if (it == p.names.end()) {
      auto owned = std::make_unique<const std::string>(text);
      const std::string_view key(*owned);
      it = p.names.emplace(key, std::move(owned)).first;
    }
    stored = it->second.get();
  }
  seen.emplace(std::string_view(*stored), stored);
  return stored;
}

}  // namespace

OpName::OpName(std::string_view text) : text_(intern(text)) {}

std::ostream& operator<<(std::ostream& os, const OpName& name) {
  return os << name.view();
}

}  // namespace meshsim
