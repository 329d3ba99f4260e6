#include "tools/temp_files.hpp"

#include <array>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <unistd.h>

namespace meshsim {
namespace {

// Each slot holds a malloc'ed copy of a path or null. The handlers only load the pointers and
// call unlink(2), both async-signal-safe; the copies are freed only after their slot was cleared.
std::array<std::atomic<char*>, kMaxTemporaries> g_slots{};

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kSignalCount = 3;
// What each signal did before the handler below was installed; restored before the signal is
// raised again, so the process ends (or a previous handler runs) as if it had never been caught.
std::array<struct sigaction, kSignalCount> g_previous{};

void unlink_all() {
  for (auto& slot : g_slots) {
    if (const char* p = slot.load(std::memory_order_acquire)) ::unlink(p);
  }
}

void on_fatal_signal(int sig) {
  unlink_all();
  for (int i = 0; i < kSignalCount; ++i) {
    if (kSignals[i] == sig) ::sigaction(sig, &g_previous[static_cast<std::size_t>(i)], nullptr);
  }
  std::raise(sig);  // blocked until this handler returns, then delivered as before
}

void unlink_at_exit() {
  unlink_all();
}

// Installs the handler on every signal that is not ignored and not already handled by it (a
// framework that re-installs its own handlers between registrations is overridden again).
void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(unlink_at_exit); });
  for (int i = 0; i < kSignalCount; ++i) {
    struct sigaction current {};
    if (::sigaction(kSignals[i], nullptr, &current) != 0) continue;
    if (current.sa_handler == SIG_IGN || current.sa_handler == on_fatal_signal) continue;
    g_previous[static_cast<std::size_t>(i)] = current;
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(kSignals[i], &sa, nullptr);
  }
}

}  // namespace

void register_temporary(const std::string& path) {
  install_handlers();
  char* copy = ::strdup(path.c_str());
  if (copy == nullptr) return;
  for (auto& slot : g_slots) {
    char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, copy, std::memory_order_acq_rel)) return;
  }
  std::free(copy);  // registry full: the owner still removes it
}

void unregister_temporary(const std::string& path) {
  for (auto& slot : g_slots) {
    char* p = slot.load(std::memory_order_acquire);
    if (p == nullptr || path != p) continue;
    if (slot.compare_exchange_strong(p, nullptr, std::memory_order_acq_rel)) {
      std::free(p);
      return;
    }
  }
}

int registered_temporaries() {
  int n = 0;
  for (const auto& slot : g_slots) n += slot.load(std::memory_order_acquire) != nullptr;
  return n;
}

}  // namespace meshsim
