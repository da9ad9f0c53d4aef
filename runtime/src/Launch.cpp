//===- Launch.cpp ---------------------------------------------------------===//

#include "tpcrt/Launch.h"

#include "tpcrt/CommandLine.h"
#include "tpcrt/FileIO.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tpcrt;

namespace {

/// The program called `name` in a directory of PATH, or "".
std::string findInPath(const std::string &name) {
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t begin = 0; begin <= dirs.size();) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos)
      end = dirs.size();
    std::string dir = dirs.substr(begin, end - begin);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    begin = end + 1;
  }
  return "";
}

/// Gives the mpiexec about to start a session directory parent of its own,
/// `$TMPDIR/tpc-run-ompi-<uid>/<pid>` (the pid is mpiexec's: exec keeps
/// it), unless the user chose one. Open MPI's jobs share
/// `/tmp/ompi.<host>.<uid>` by default, and one job's cleanup can remove it
/// while a concurrent job creates its directory inside ("orte_session_dir
/// failed": seen with two tpc-run --ranks at once). The parents of launches
/// whose process is gone are removed here, at the next launch. Every program
/// uses the same `tpc-run-ompi-<uid>`, so that one's launch cleans up after
/// the other's.
void privateMpiSessionDirectory() {
  if (std::getenv("OMPI_MCA_orte_tmpdir_base"))
    return;
  const char *tmp = std::getenv("TMPDIR");
  std::string base = std::string(tmp && *tmp ? tmp : "/tmp") +
                     "/tpc-run-ompi-" + std::to_string(::getuid());
  if (::mkdir(base.c_str(), 0700) != 0 && errno != EEXIST)
    return; // Open MPI's default then
  if (DIR *dir = ::opendir(base.c_str())) {
    while (struct dirent *entry = ::readdir(dir)) {
      char *end = nullptr;
      long pid = std::strtol(entry->d_name, &end, 10);
      if (end == entry->d_name || *end != '\0' || pid <= 0)
        continue;
      if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        // Best effort: a leftover only wastes a directory.
        (void)removeTree(base + "/" + entry->d_name);
    }
    ::closedir(dir);
  }
  std::string mine = base + "/" + std::to_string(::getpid());
  if (::mkdir(mine.c_str(), 0700) == 0 || errno == EEXIST)
    ::setenv("OMPI_MCA_orte_tmpdir_base", mine.c_str(), 1);
}

} // namespace

bool tpcrt::underLauncher(const RankLauncher &launcher) {
  for (const char *name : {launcher.launchedMarker, "OMPI_COMM_WORLD_SIZE",
                           "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID"})
    if (std::getenv(name))
      return true;
  return false;
}

int64_t tpcrt::launcherRank() {
  for (const char *name :
       {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    uint64_t rank = 0;
    if (const char *text = std::getenv(name))
      if (parseDecimal(text, rank))
        return static_cast<int64_t>(rank);
  }
  return -1;
}

bool tpcrt::joinLauncherWorld(const RankLauncher &launcher,
                              std::unique_ptr<Communicator> &world) {
  if (!underLauncher(launcher))
    return true;
  // A rank that ends while MPI starts (its connection to the launcher half
  // made) can leave Open MPI's mpiexec waiting forever (seen with SIGTERM
  // to a starting rank: every rank gone, mpiexec still there). So SIGINT
  // and SIGTERM wait until MPI has started; the previous mask then delivers
  // one that came meanwhile to the caller's handler.
  sigset_t interrupts, previous;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &interrupts, &previous);
  Status s = hasMpiBackend()
                 ? createMpiWorldCommunicator(world)
                 : Status::error(std::string("started by a launcher (mpirun, "
                                             "srun), but this ") +
                                 launcher.program + " was built without MPI");
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (s)
    return true;
  if (launcherRank() <= 0)
    reportError(s, 0, 1);
  return false;
}

unsigned tpcrt::coreCount() {
  return std::max(1u, std::thread::hardware_concurrency());
}

Status tpcrt::relaunch(const RankLauncher &launcher, int argc, char **argv,
                       uint64_t ranks, const std::string &withoutMpi) {
  if (!hasMpiBackend())
    return Status::error(withoutMpi);
  std::string count = std::to_string(ranks);
  std::string mpiexec = findInPath("mpiexec");
  if (mpiexec.empty())
    return Status::error("--ranks " + count +
                         ": no mpiexec on PATH (install Open MPI, or start " +
                         launcher.program + " under mpirun/srun)");
  char self[4096];
  ssize_t length = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string program =
      length > 0 ? std::string(self, static_cast<size_t>(length)) : argv[0];
  // The ranks share the cores: one BLAS thread each unless told otherwise.
  if (!std::getenv("OPENBLAS_NUM_THREADS")) {
    std::string threads =
        std::to_string(std::max<uint64_t>(1, coreCount() / ranks));
    ::setenv("OPENBLAS_NUM_THREADS", threads.c_str(), 1);
  }
  ::setenv(launcher.launchedMarker, "1", 1);
  privateMpiSessionDirectory();
  std::vector<std::string> words = {
      mpiexec, "--allow-run-as-root", "--oversubscribe", "-n", count, program};
  for (int i = 1; i < argc; ++i)
    words.push_back(argv[i]);
  std::vector<char *> args;
  for (std::string &word : words)
    args.push_back(word.data());
  args.push_back(nullptr);
  // What either stream holds would otherwise be lost with this process.
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(mpiexec.c_str(), args.data());
  return Status::error("--ranks " + count + ": cannot run " + mpiexec + ": " +
                       std::strerror(errno));
}

void tpcrt::reportError(const Status &status, int rank, int ranks) {
  std::fflush(stdout);
  if (ranks > 1)
    std::fprintf(stderr, "error: rank %d: %s\n", rank,
                 status.message().c_str());
  else
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
  std::fflush(stderr);
}
