//===- Watchdog.h - a bound on every wait for another rank ------*- C++ -*-===//
//
// A rank that stops without dying (SIGSTOP, a stuck device, a lost node)
// leaves its peers waiting in a collective or a transfer forever: MPI never
// returns. The watchdog bounds every such wait (tpc-run --timeout, issue 18):
// a communicator marks the span of each blocking call with a WaitGuard, the
// interpreter publishes which step and kernel runs, and a thread that wakes
// a few times a second ends the process, with a message naming the step, the
// kernel, the operation and the group, once one wait has made no progress
// for the timeout. The launcher (mpiexec, srun) then ends every other rank,
// as when a rank dies.
//
// It ends the process from its own thread with _Exit rather than MPI_Abort:
// MPI is initialized for one thread, and the main thread is inside an MPI
// call. Nothing is allocated on the waiting path: a guard stores three
// pointers and a time.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_WATCHDOG_H
#define TPCRT_WATCHDOG_H

#include <cstdint>
#include <string>

namespace tpcrt {

/// Starts the watchdog thread for this process's rank `rank`: a wait longer
/// than `seconds` ends the process with exit status 1 after printing
/// `error: rank R: step S, kernel K (NAME) OPERATION over GROUP: no progress
/// for T s` to stderr. 0 seconds: no watchdog (nothing started). Call once,
/// before the first wait; later calls change the timeout.
void startWatchdog(double seconds, int rank);

/// What the rank runs: step (1-based, as tpc-run prints it) and kernel
/// (its index in the executable and opcode name, a string literal). Cheap:
/// three relaxed stores.
void setWatchdogPosition(uint64_t step, uint32_t kernel, const char *name);

/// The step last published by setWatchdogPosition (0 before the first
/// kernel); async-signal-safe.
uint64_t watchdogStep();

/// The text after "error: " the watchdog prints for a wait of `operation`
/// over `group` at the published position, stalled for `seconds`.
std::string watchdogMessage(int rank, const char *operation,
                            const std::string *group, double seconds);

/// WaitGuard's two halves, for code that cannot hold a guard (the CUDA
/// backend, a library of its own, marks its waits through these).
void beginWatchdogWait(const char *operation, const std::string *group);
void endWatchdogWait();

/// Marks a blocking wait for other ranks, from construction to destruction.
/// `operation` ("all_reduce", "recv", ...) must outlive the guard (a string
/// literal); `group` (the communicator's label, e.g. "[tp]") may be null.
class WaitGuard {
public:
  WaitGuard(const char *operation, const std::string *group);
  ~WaitGuard();
  WaitGuard(const WaitGuard &) = delete;
  WaitGuard &operator=(const WaitGuard &) = delete;
};

} // namespace tpcrt

#endif // TPCRT_WATCHDOG_H
