//===- Watchdog.cpp - a bound on every wait for another rank --------------===//

#include "tpcrt/Watchdog.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>

using namespace tpcrt;

namespace {

using Clock = std::chrono::steady_clock;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Clock::now().time_since_epoch())
      .count();
}

struct State {
  std::atomic<int64_t> timeoutNs{0};
  std::atomic<int> rank{0};
  std::atomic<bool> started{false};
  // The wait in progress: its start (0: none), operation and group.
  std::atomic<int64_t> waitSinceNs{0};
  std::atomic<const char *> operation{nullptr};
  std::atomic<const std::string *> group{nullptr};
  // Where the rank is.
  std::atomic<uint64_t> step{0};
  std::atomic<uint32_t> kernel{0};
  std::atomic<const char *> kernelName{nullptr};
};

State &state() {
  // Never destroyed: the thread reads it. Built in static storage, not on
  // the heap: the first call may come from a step (setWatchdogPosition),
  // and a step allocates nothing (InterpreterTest).
  alignas(State) static unsigned char storage[sizeof(State)];
  static State *s = new (storage) State();
  return *s;
}

std::string secondsText(double seconds) {
  char text[32];
  if (seconds == std::floor(seconds))
    std::snprintf(text, sizeof(text), "%.0f", seconds);
  else
    std::snprintf(text, sizeof(text), "%.3g", seconds);
  return text;
}

[[noreturn]] void watch() {
  State &s = state();
  for (;;) {
    int64_t timeout = s.timeoutNs.load(std::memory_order_relaxed);
    // Wake ten times per timeout, at most every 100 ms.
    int64_t sleepNs = std::min<int64_t>(timeout / 10, 100000000);
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(std::max<int64_t>(sleepNs, 1000000)));
    int64_t since = s.waitSinceNs.load(std::memory_order_acquire);
    if (since == 0 || timeout <= 0 || nowNs() - since < timeout)
      continue;
    std::string message = watchdogMessage(
        s.rank.load(), s.operation.load(), s.group.load(),
        static_cast<double>(timeout) / 1e9);
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", message.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
}

} // namespace

void tpcrt::startWatchdog(double seconds, int rank) {
  State &s = state();
  s.rank.store(rank);
  s.timeoutNs.store(static_cast<int64_t>(seconds * 1e9));
  if (seconds > 0 && !s.started.exchange(true))
    std::thread(watch).detach();
}

void tpcrt::setWatchdogPosition(uint64_t step, uint32_t kernel,
                                const char *name) {
  State &s = state();
  s.step.store(step, std::memory_order_relaxed);
  s.kernel.store(kernel, std::memory_order_relaxed);
  s.kernelName.store(name, std::memory_order_relaxed);
}

uint64_t tpcrt::watchdogStep() {
  return state().step.load(std::memory_order_relaxed);
}

std::string tpcrt::watchdogMessage(int rank, const char *operation,
                                   const std::string *group, double seconds) {
  State &s = state();
  std::string text = "rank " + std::to_string(rank) + ": ";
  if (const char *name = s.kernelName.load())
    text += "step " + std::to_string(s.step.load()) + ", kernel " +
            std::to_string(s.kernel.load()) + " (" + name + ") ";
  text += operation ? operation : "a wait";
  if (group && !group->empty())
    text += " over " + *group;
  text += ": no progress for " + secondsText(seconds) +
          " s (tpc-run --timeout; a rank stopped or too slow)";
  return text;
}

WaitGuard::WaitGuard(const char *operation, const std::string *group) {
  beginWatchdogWait(operation, group);
}

WaitGuard::~WaitGuard() { endWatchdogWait(); }

void tpcrt::beginWatchdogWait(const char *operation, const std::string *group) {
  State &s = state();
  s.operation.store(operation, std::memory_order_relaxed);
  s.group.store(group, std::memory_order_relaxed);
  s.waitSinceNs.store(nowNs(), std::memory_order_release);
}

void tpcrt::endWatchdogWait() {
  state().waitSinceNs.store(0, std::memory_order_release);
}
