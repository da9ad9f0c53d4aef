"""What the end-to-end check drivers share: the command line, running a tool,
and the memory check every tpc-run must pass."""

import argparse
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile


class Case:
    """A parsed command line: the case's name and work folder, and `tool`,
    which names a binary of --bin-dir."""

    def __init__(self, description, cases):
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--bin-dir", required=True)
        parser.add_argument("--src-root", required=True,
                            help="the tpc checkout (configs are read from it)")
        parser.add_argument("--work-dir", required=True)
        parser.add_argument("--case", required=True, choices=sorted(cases))
        args = parser.parse_args()
        self.name = args.case
        self.bin_dir = args.bin_dir
        self.src_root = args.src_root
        self.work = os.path.join(args.work_dir, args.case)
        os.makedirs(self.work, exist_ok=True)

    def tool(self, name):
        return os.path.join(self.bin_dir, name)


def run(cmd):
    """Runs a tool, echoing its output; exits with status 1 if it fails."""
    print("+ " + " ".join(cmd), flush=True)
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        print("FAIL: %s exited with status %d" % (cmd[0], result.returncode))
        sys.exit(1)
    return result.stdout


def check_peak(stdout):
    """The runtime measures its peak from what it runs (each buffer live from
    its first write to its last read), independently of the plan's offsets;
    the two must agree. Returns the number of failures (0 or 1)."""
    peaks = re.search(r"^rank 0 peak_bytes (\d+) planned_peak_bytes (\d+)$", stdout,
                      re.MULTILINE)
    if not peaks:
        print("FAIL: tpc-run printed no 'rank 0 peak_bytes .. planned_peak_bytes ..' line")
        return 1
    if peaks.group(1) != peaks.group(2):
        print("FAIL: measured peak %s bytes != planned peak %s bytes" % peaks.groups())
        return 1
    print("ok peak: measured %s bytes == planned" % peaks.group(1))
    return 0


def private_mpi_session_dir():
    """Gives this test's mpiexec launches (tpc-run --ranks) a session
    directory of their own. Open MPI 4.1 creates <tmpdir>/ompi.<host>.<uid>
    when a launch starts and removes it when its last job ends; two launches
    at the same moment (two tests of one ctest -j2) race to create it and
    one fails at start ("A call to mkdir was unable to create the desired
    directory ... File exists", open-mpi/ompi#8510; seen here once in 580
    tests). Short, under /tmp: it holds Unix sockets. A base the caller set
    is kept."""
    if os.environ.get("OMPI_MCA_orte_tmpdir_base"):
        return
    base = tempfile.mkdtemp(prefix="tpc-mpi-", dir="/tmp")
    os.environ["OMPI_MCA_orte_tmpdir_base"] = base
    atexit.register(shutil.rmtree, base, True)


RANK_PEAK_LINE = re.compile(r"^rank (\d+) peak_bytes (\d+) planned_peak_bytes (\d+)$",
                            re.MULTILINE)


def check_rank_peaks(stdout, ranks, report):
    """A run on `ranks` ranks prints one peak line per rank, and each rank's
    measured peak equals its planned peak. `report(ok, message)` counts."""
    peaks = RANK_PEAK_LINE.findall(stdout)
    report(sorted(int(r) for r, _, _ in peaks) == list(range(ranks)),
           "one 'rank r peak_bytes ..' line per rank 0..%d: got ranks %s"
           % (ranks - 1, [r for r, _, _ in peaks]))
    for rank, measured, planned in peaks:
        if measured != planned:
            report(False, "rank %s: measured peak %s bytes != planned %s"
                   % (rank, measured, planned))


def compare_gradients(actual_grads, expected_grads, what, tolerance, report, dtype=None):
    """Every gradient of `expected_grads` (name -> tensor) is in
    `actual_grads` with its shape (and `dtype`, if given) and within
    `tolerance` of it (INTERFACE.md's norm-wise relative error), and nothing
    else was dumped; each failure goes to `report(False, message)`. Prints
    and returns the worst error."""
    import tpc_torch  # torch: only the drivers that can import it call this.
    worst = 0.0
    for name in sorted(expected_grads):
        actual, expected = actual_grads.get(name), expected_grads[name]
        if actual is None or tuple(actual.shape) != tuple(expected.shape) \
                or (dtype is not None and actual.dtype != dtype):
            report(False, "%s: gradient missing, or not %sof shape %s (against %s)"
                   % (name, "" if dtype is None else "%s " % dtype,
                      list(expected.shape), what))
            continue
        error = tpc_torch.relative_error(actual, expected)
        worst = max(worst, error)
        if error > tolerance:
            report(False, "%s: gradient relative error %.3e against %s (tolerance %.2e)"
                   % (name, error, what, tolerance))
    extra = sorted(set(actual_grads) - set(expected_grads))
    if extra:
        report(False, "gradients dumped for unknown tensors: %s" % ", ".join(extra))
    print("gradients vs %s: %d parameters, worst relative error %.2e (tolerance %.2e)"
          % (what, len(expected_grads), worst, tolerance))
    return worst
