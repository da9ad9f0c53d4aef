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
