//===- Launch.cpp ---------------------------------------------------------===//

#include "tpcrt/Launch.h"

#include "tpcrt/CommandLine.h"
#include "tpcrt/FileIO.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/// Appends to `out` the numbers that name entries of `dir` (a pid's
/// canonical decimal form only: /proc's processes, the session folders
/// below).
void listPids(const std::string &dir, std::vector<pid_t> &out) {
  if (DIR *d = ::opendir(dir.c_str())) {
    while (struct dirent *entry = ::readdir(d)) {
      char *end = nullptr;
      long pid = std::strtol(entry->d_name, &end, 10);
      if (end != entry->d_name && *end == '\0' && pid > 0 &&
          std::to_string(pid) == entry->d_name)
        out.push_back(static_cast<pid_t>(pid));
    }
    ::closedir(d);
  }
}

/// Gives the mpiexec about to start a session directory parent of its own,
/// `$TMPDIR/tpc-run-ompi-<uid>/<pid>` (the pid is the launcher's, which
/// lives as long as mpiexec), unless the user chose one. Open MPI's jobs share
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
  std::vector<pid_t> launches;
  listPids(base, launches);
  for (pid_t pid : launches)
    if (::kill(pid, 0) != 0 && errno == ESRCH)
      // Best effort: a leftover only wastes a directory.
      (void)removeTree(base + "/" + std::to_string(pid));
  std::string mine = base + "/" + std::to_string(::getpid());
  if (::mkdir(mine.c_str(), 0700) == 0 || errno == EEXIST)
    ::setenv("OMPI_MCA_orte_tmpdir_base", mine.c_str(), 1);
}

/// A signal sent to the launcher, for superviseMpiexec to pass on (0:
/// none).
volatile sig_atomic_t signalToPass = 0;
/// The last of those signals the launcher got, from anywhere (0: none).
volatile sig_atomic_t signalGot = 0;

/// SIGINT, SIGTERM and SIGHUP that a process sent to the launcher go on to
/// the ranks (superviseMpiexec). One from the terminal (Ctrl-C) reached
/// mpiexec too (the same process group), which passes it on itself.
extern "C" void noteSignal(int signal, siginfo_t *info, void *) {
  if (info && info->si_code <= 0) // SI_USER, SI_QUEUE, ...: from a process
    signalToPass = signal;
  signalGot = signal;
}

/// A process's name (comm), state letter and parent from /proc/<pid>/stat.
bool readProcState(pid_t pid, std::string &name, char &state, pid_t &parent) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text))
    return false;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
  size_t close = text.rfind(')');
  size_t open = text.find('(');
  if (open == std::string::npos || close == std::string::npos || close < open ||
      close + 4 > text.size())
    return false;
  name = text.substr(open + 1, close - open - 1);
  state = text[close + 2];
  parent = static_cast<pid_t>(std::atol(text.c_str() + close + 4));
  return true;
}

/// The processes below `root` that run `program`: the ranks.
struct Ranks {
  bool any = false;        ///< one is there, if only as a zombie
  std::vector<pid_t> live; ///< those that have not ended (a zombie has)
};

/// The processes below `root`. Through /proc/<pid>/task/<tid>/children (a
/// child is listed under the thread that started it) where the kernel has
/// them: a scan of every process costs too much on a busy node every few
/// tenths of a second. Else from every process's parent.
std::vector<pid_t> processesBelow(pid_t root) {
  static const bool childrenFiles =
      ::access(("/proc/self/task/" + std::to_string(::getpid()) + "/children")
                   .c_str(),
               R_OK) == 0;
  std::vector<pid_t> below;
  if (childrenFiles) {
    std::vector<pid_t> pending = {root};
    while (!pending.empty() && below.size() < 4096) {
      std::string tasks = "/proc/" + std::to_string(pending.back()) + "/task";
      pending.pop_back();
      std::vector<pid_t> threads;
      listPids(tasks, threads);
      for (pid_t thread : threads) {
        std::ifstream in(tasks + "/" + std::to_string(thread) + "/children");
        for (pid_t child; in >> child;) {
          below.push_back(child);
          pending.push_back(child);
        }
      }
    }
    return below;
  }
  std::vector<pid_t> all;
  listPids("/proc", all);
  std::map<pid_t, pid_t> parents;
  for (pid_t pid : all) {
    std::string name;
    char state;
    if (pid_t parent; readProcState(pid, name, state, parent))
      parents[pid] = parent;
  }
  for (const auto &[pid, parent] : parents) {
    pid_t up = parent;
    for (int hops = 0; up > 1 && up != root && hops < 64; ++hops) {
      auto it = parents.find(up);
      up = it == parents.end() ? 0 : it->second;
    }
    if (up == root)
      below.push_back(pid);
  }
  return below;
}

Ranks findRanks(pid_t root, const std::string &program) {
  Ranks ranks;
  // The kernel keeps 15 bytes of a name.
  std::string shortName = program.substr(program.rfind('/') + 1, 15);
  for (pid_t pid : processesBelow(root)) {
    std::string name;
    char state;
    pid_t parent;
    if (!readProcState(pid, name, state, parent))
      continue; // gone and reaped meanwhile
    char exe[4096];
    std::string link = "/proc/" + std::to_string(pid) + "/exe";
    ssize_t length = ::readlink(link.c_str(), exe, sizeof(exe) - 1);
    // A zombie's exe link is gone: its name tells then.
    bool ended = state == 'Z' || state == 'X';
    bool runsProgram =
        length > 0 ? std::string(exe, static_cast<size_t>(length)) == program
                   : ended && name == shortName;
    if (runsProgram) {
      ranks.any = true;
      if (!ended)
        ranks.live.push_back(pid);
    }
  }
  return ranks;
}

/// How long mpiexec may go on after its last rank has ended. It ends within
/// about a second when it works; Open MPI's can wait forever when a rank
/// ended while MPI started in it (seen with SIGKILL to a starting rank).
constexpr auto kMpiexecGrace = std::chrono::seconds(10);

/// The signals the launcher passes on.
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

sigset_t forwardedSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int signal : kForwardedSignals)
    sigaddset(&signals, signal);
  return signals;
}

/// Waits for mpiexec (`child`), passing signals on, and exits as it did. A
/// mpiexec that outlives its ranks by kMpiexecGrace is stopped (SIGTERM,
/// then SIGKILL), with a message and status 1. The forwarded signals are
/// blocked on entry (since before mpiexec started: none is lost); `mask` is
/// the mask to restore once they are passed on.
[[noreturn]] void superviseMpiexec(pid_t child, const std::string &program,
                                   const sigset_t &mask) {
  struct sigaction action = {};
  action.sa_sigaction = noteSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int signal : kForwardedSignals)
    ::sigaction(signal, &action, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  using Clock = std::chrono::steady_clock;
  bool sawRank = false;
  Clock::time_point lastRank = Clock::now();
  int status = 0;
  for (;;) {
    pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child || (done < 0 && errno != EINTR))
      break;
    Ranks ranks = findRanks(child, program);
    sawRank = sawRank || ranks.any;
    // To the ranks themselves: each ends with its message and mpiexec ends
    // the job as when a rank fails. Open MPI's mpiexec, given a signal more
    // than once (timeout(1) sends one to the process and one to its group),
    // kills the ranks at once, without their messages.
    if (int signal = signalToPass) {
      signalToPass = 0;
      if (ranks.live.empty())
        ::kill(child, signal);
      for (pid_t rank : ranks.live)
        ::kill(rank, signal);
    }
    if (!ranks.live.empty() || !sawRank) {
      lastRank = Clock::now();
    } else if (Clock::now() - lastRank > kMpiexecGrace) {
      std::fprintf(stderr,
                   "error: mpiexec did not end %lld s after its last rank "
                   "did: stopped it\n",
                   static_cast<long long>(kMpiexecGrace.count()));
      ::kill(child, SIGTERM);
      for (int i = 0; i < 30 && ::waitpid(child, &status, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      std::exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (int signal = signalGot; signal && !sawRank && !ok) {
    // mpiexec, signalled before it had started the ranks, may say nothing.
    std::fprintf(stderr, "error: %s while the ranks started\n",
                 signalPhrase(signal));
    std::exit(1);
  }
  if (WIFSIGNALED(status)) {
    // As the shell would have seen mpiexec end.
    ::signal(WTERMSIG(status), SIG_DFL);
    ::kill(::getpid(), WTERMSIG(status));
    std::exit(128 + WTERMSIG(status));
  }
  std::exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
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
  // Written once, not once by each process.
  std::fflush(stdout);
  std::fflush(stderr);
  // mpiexec runs as a child, not in this process's place: this process
  // stays to end a mpiexec that outlives its ranks (superviseMpiexec).
  int failed[2];
  if (::pipe2(failed, O_CLOEXEC) != 0)
    return Status::error("--ranks " + count + ": " + std::strerror(errno));
  // Held back until the forwarder is in place (superviseMpiexec).
  sigset_t forwarded = forwardedSignals(), mask;
  ::pthread_sigmask(SIG_BLOCK, &forwarded, &mask);
  pid_t child = ::fork();
  if (child < 0) {
    int error = errno;
    ::pthread_sigmask(SIG_SETMASK, &mask, nullptr);
    return Status::error("--ranks " + count + ": cannot start " + mpiexec +
                         ": " + std::strerror(error));
  }
  if (child == 0) {
    ::close(failed[0]);
    ::pthread_sigmask(SIG_SETMASK, &mask, nullptr);
    ::execv(mpiexec.c_str(), args.data());
    int error = errno;
    (void)!::write(failed[1], &error, sizeof error);
    ::_exit(127);
  }
  ::close(failed[1]);
  int error = 0;
  ssize_t got;
  while ((got = ::read(failed[0], &error, sizeof error)) < 0 && errno == EINTR)
    ;
  ::close(failed[0]);
  if (got == static_cast<ssize_t>(sizeof error)) {
    ::waitpid(child, nullptr, 0);
    ::pthread_sigmask(SIG_SETMASK, &mask, nullptr);
    return Status::error("--ranks " + count + ": cannot run " + mpiexec + ": " +
                         std::strerror(error));
  }
  // `ps` tells the launcher from its ranks (the same program).
  ::prctl(PR_SET_NAME, "tpc-launcher");
  superviseMpiexec(child, program, mask);
}

const char *tpcrt::signalPhrase(int signal) {
  if (signal == SIGINT)
    return "interrupted (SIGINT)";
  return signal == SIGHUP ? "hung up (SIGHUP)" : "terminated (SIGTERM)";
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
