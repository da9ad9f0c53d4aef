//===- Launch.h - starting a program's ranks under MPI ----------*- C++ -*-===//
//
// The programs that run ranks on CPUs (tpc-run, tpc-measure-hardware) start
// them alike: under mpirun/mpiexec or srun they use the launcher's ranks (the
// MPI world); alone, `--ranks N` re-executes the program under
// `mpiexec --allow-run-as-root --oversubscribe -n N` (mpiexec from PATH),
// whose ranks then find themselves under a launcher. One copy of that here,
// so that a rank started by either program sees the same environment
// (OPENBLAS_NUM_THREADS, Open MPI's session directory) and a measurement
// describes the ranks a run has. See docs/runtime/tpc-run.md.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_LAUNCH_H
#define TPCRT_LAUNCH_H

#include "tpcrt/Comm.h"
#include "tpcrt/Status.h"

#include <cstdint>
#include <memory>
#include <string>

namespace tpcrt {

/// What tells the programs that launch ranks apart.
struct RankLauncher {
  /// The program's name in messages ("tpc-run").
  const char *program;
  /// The environment variable set to 1 for the ranks relaunch() starts, so
  /// that they do not start ranks again (TPCRT_RUN_LAUNCHED for tpc-run).
  const char *launchedMarker;
};

/// True when a launcher (mpirun/mpiexec, srun, a PMI server) or relaunch()
/// started this process as one of several ranks.
bool underLauncher(const RankLauncher &launcher);

/// The rank the launcher gave this process, from its environment, or -1
/// where it does not say (before MPI is initialized, to pick the one rank
/// that reports an error every rank finds alike).
int64_t launcherRank();

/// Under a launcher, makes `world` the launcher's MPI world; elsewhere
/// leaves it null. Returns false when that fails (a runtime built without
/// MPI, MPI failing to start), after printing the error as reportError does
/// from the launcher's rank 0 alone: every rank finds it alike. The program
/// then exits with status 1. SIGINT and SIGTERM are held back while MPI
/// starts and delivered once it has (a rank ending halfway through can hang
/// mpiexec): install their handlers before calling this.
bool joinLauncherWorld(const RankLauncher &launcher,
                       std::unique_ptr<Communicator> &world);

/// The cores of this machine (at least 1), which the ranks started here
/// share.
unsigned coreCount();

/// Runs `mpiexec --allow-run-as-root --oversubscribe -n <ranks> <this
/// program> <argv[1..]>`, with `launchedMarker` set and, unless they are
/// set, OPENBLAS_NUM_THREADS = coreCount() / ranks (at least 1: the ranks
/// share the cores) and a private Open MPI session directory, then exits
/// with mpiexec's status. Meanwhile this process (renamed `tpc-launcher`)
/// passes SIGINT/SIGTERM/SIGHUP sent to it on to the ranks (to mpiexec
/// before they have started), and stops a mpiexec still there 10 s after
/// its last rank ended (Open MPI's can wait forever when a rank ends while
/// MPI starts in it), with a message and status 1. Returns only on
/// failure: `withoutMpi` where the runtime was built without MPI (each
/// program says what that costs it), else no mpiexec on PATH or it failing
/// to start, "--ranks <N>: ...".
Status relaunch(const RankLauncher &launcher, int argc, char **argv,
                uint64_t ranks, const std::string &withoutMpi);

/// How an error line names the signal that ended a run: "interrupted
/// (SIGINT)", "hung up (SIGHUP)", else "terminated (SIGTERM)". A constant
/// string: safe in a signal handler.
const char *signalPhrase(int signal);

/// Prints a failure to stderr after what stdout holds: "error: <message>",
/// or "error: rank <rank>: <message>" when `ranks` > 1.
void reportError(const Status &status, int rank, int ranks);

} // namespace tpcrt

#endif // TPCRT_LAUNCH_H
