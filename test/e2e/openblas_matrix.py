#!/usr/bin/env python3
"""Runs the end-to-end suite under every OpenBLAS kernel set this CPU can run.

OpenBLAS picks its kernels by CPU (its DYNAMIC_ARCH build, as Debian's), and
each kernel set sums in its own order, so a tolerance that holds on one
machine can fail on another. This script forces each core type
(OPENBLAS_CORETYPE = Haswell, SkylakeX, Sandybridge, Prescott, and unset: the
one OpenBLAS picks by itself) with OPENBLAS_NUM_THREADS 1 and 2, and runs every
`e2e.*` test of the build (the commands ctest would run, from
`ctest --show-only=json-v1`) in each configuration, in its own work folder.
A core type whose instructions the CPU lacks is skipped with the reason
(SkylakeX without AVX-512 dies with SIGILL); so is one the library does not
honor (a build without DYNAMIC_ARCH). Prints, per configuration, the tests
passed, failed and skipped, and per kind of check (loss, logits, gradient,
grad_norm, lr, update) the largest error seen against its tolerance (error /
tolerance; the update's |tpc - float64| / bound), leaving out the perturbed
cases, which pass by exceeding them. Exit status 0 when nothing failed.

    test/e2e/openblas_matrix.py --build-dir build [--jobs 2] [--tests REGEX]
        [--log-dir DIR] [--bin-dir COPY_OF_BUILD_BIN] [--source-dir CHECKOUT]
        [--cores default,Prescott]
"""

import argparse
import concurrent.futures
import ctypes
import json
import os
import re
import subprocess
import sys
import time

# Core type -> the CPU flags (/proc/cpuinfo) its kernels use (SSE3 is
# "pni" there). "default" unsets OPENBLAS_CORETYPE: the library's own pick
# (Cooperlake on an AVX-512 CPU with bf16, which OPENBLAS_CORETYPE cannot
# name in Debian's 0.3.21).
CORE_TYPES = [
    ("default", []),
    ("Haswell", ["avx2", "fma"]),
    ("SkylakeX", ["avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"]),
    ("Sandybridge", ["avx"]),
    ("Prescott", ["pni"]),
]
THREADS = (1, 2)
BIN_DIR = None
SOURCES = None  # (the build's source dir, the one to use instead)

# What the e2e drivers print: "... relative error E ... (tolerance T ...",
# and the update check's "worst |tpc - float64| / bound R". Each error line
# counts for the first kind its text names.
KINDS = ("gradient", "grad_norm", "logits", "loss", "lr")
ERROR_LINE = re.compile(r"^(?:ok |FAIL )?(.*?)relative error ([0-9.e+-]+)\D*?"
                        r"tolerance ([0-9.e+-]+)", re.MULTILINE)
BOUND_LINE = re.compile(r"/ bound ([0-9.e+-]+)")


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def openblas_library(binary):
    """The libopenblas that `binary` loads (ldd), or None."""
    out = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, text=True).stdout
    match = re.search(r"(\S*lib(?:open)?blas\S*\.so\S*) => (\S+)", out)
    return match.group(2) if match else None


def core_taken(library, core):
    """The core name OpenBLAS reports under OPENBLAS_CORETYPE=core (a fresh
    process: the variable is read when the library loads)."""
    code = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); "
            "lib.openblas_get_corename.restype = ctypes.c_char_p; "
            "print(lib.openblas_get_corename().decode())")
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if core != "default":
        env["OPENBLAS_CORETYPE"] = core
    result = subprocess.run([sys.executable, "-c", code, library], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def e2e_tests(build_dir, pattern):
    shown = subprocess.run(["ctest", "--show-only=json-v1", "-R", pattern], cwd=build_dir,
                           stdout=subprocess.PIPE, check=True, text=True).stdout
    tests = []
    for test in json.loads(shown)["tests"]:
        properties = {p["name"]: p["value"] for p in test.get("properties", [])}
        environment = dict(item.split("=", 1) for item in properties.get("ENVIRONMENT", []))
        tests.append(dict(name=test["name"], command=test["command"], env=environment,
                          build_dir=build_dir,
                          skip=properties.get("SKIP_RETURN_CODE"),
                          cwd=properties.get("WORKING_DIRECTORY", build_dir)))
    return tests


def relocate(arg, build_dir):
    """An argument of a test's command with the build's tools replaced by
    --bin-dir and the build's sources by --source-dir."""
    tools = os.path.join(build_dir, "bin")
    if BIN_DIR and arg.startswith(tools):
        return BIN_DIR + arg[len(tools):]
    if SOURCES and (arg == SOURCES[0] or arg.startswith(SOURCES[0] + "/")) \
            and not arg.startswith(build_dir):
        return SOURCES[1] + arg[len(SOURCES[0]):]
    return arg


def run_test(test, core, threads, label):
    command = list(test["command"])
    command = [relocate(arg, test["build_dir"]) for arg in command]
    if "--work-dir" in command:
        i = command.index("--work-dir") + 1
        command[i] = os.path.join(command[i], label)
    env = dict(os.environ)
    env.update(test["env"])
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    env.pop("OPENBLAS_CORETYPE", None)
    if core != "default":
        env["OPENBLAS_CORETYPE"] = core
    start = time.time()
    result = subprocess.run(command, cwd=test["cwd"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    if result.returncode == 0:
        status = "passed"
    elif test["skip"] is not None and result.returncode == int(test["skip"]):
        status = "skipped"
    else:
        status = "FAILED"
    return test["name"], status, result.stdout, time.time() - start


def worst_ratios(output):
    """{kind: largest error / tolerance}, with kind "update" the largest
    |tpc - float64| / bound of the update check."""
    worst = {}
    for what, error, tolerance in ERROR_LINE.findall(output):
        kind = next((k for k in KINDS if k in what), "other")
        try:
            worst[kind] = max(worst.get(kind, 0.0), float(error) / float(tolerance))
        except (ValueError, ZeroDivisionError):
            continue
    bounds = [float(b) for b in BOUND_LINE.findall(output)]
    if bounds:
        worst["update"] = max(bounds)
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tests", default=r"^e2e\.", help="ctest -R regex")
    parser.add_argument("--log-dir", help="write each configuration's output here")
    parser.add_argument("--cores", help="only these core types, comma-separated "
                        "(default: all of " + ", ".join(c for c, _ in CORE_TYPES) + ")")
    parser.add_argument("--bin-dir", help="run these tools instead of the build's (a "
                        "copy, so that rebuilding meanwhile changes nothing)")
    parser.add_argument("--source-dir", help="run the test scripts of this checkout "
                        "instead of the build's (e.g. a `git worktree` of the commit "
                        "the --bin-dir copy was built from)")
    args = parser.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    global BIN_DIR, SOURCES
    BIN_DIR = args.bin_dir and os.path.abspath(args.bin_dir)
    if args.source_dir:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            home = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", f.read(), re.M)
        SOURCES = (home.group(1), os.path.abspath(args.source_dir))

    library = openblas_library(os.path.join(BIN_DIR or os.path.join(build_dir, "bin"),
                                            "tpc-run"))
    if not library:
        print("tpc-run does not load OpenBLAS: nothing to vary")
        return 1
    flags = cpu_flags()
    tests = e2e_tests(build_dir, args.tests)
    print("OpenBLAS %s; %d tests matching %s" % (library, len(tests), args.tests))

    failed_any = False
    summary = []
    wanted = set(args.cores.split(",")) if args.cores else None
    for core, needs in CORE_TYPES:
        if wanted is not None and core not in wanted:
            continue
        missing = [f for f in needs if f not in flags]
        if missing:
            print("skip %s: the CPU lacks %s (its kernels would die with SIGILL)"
                  % (core, ", ".join(missing)))
            summary.append((core, "-", "skipped: no " + ", ".join(missing)))
            continue
        taken = core_taken(library, core)
        if taken is None or (core != "default" and taken.lower() != core.lower()):
            print("skip %s: OpenBLAS took %s (not a DYNAMIC_ARCH build?)" % (core, taken))
            summary.append((core, "-", "skipped: OpenBLAS took %s" % taken))
            continue
        for threads in THREADS:
            label = "openblas-%s-t%d" % (core, threads)
            start = time.time()
            counts = {"passed": 0, "FAILED": 0, "skipped": 0}
            worst = {}
            outputs = []
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                futures = [pool.submit(run_test, t, core, threads, label) for t in tests]
                for future in concurrent.futures.as_completed(futures):
                    name, status, output, _ = future.result()
                    counts[status] += 1
                    outputs.append("==== %s: %s\n%s" % (name, status, output))
                    if status == "FAILED":
                        print("  FAILED %s (%s)" % (name, label))
                        print("\n".join("    " + line for line in output.splitlines()
                                        if line.startswith("FAIL"))[:4000])
                    if "perturbed" in name:
                        continue  # Expected to exceed: they pass by failing the check.
                    for kind, ratio in worst_ratios(output).items():
                        if "bf16" in name:
                            kind += " (bf16)"  # Against its own yardstick.
                        if ratio > worst.get(kind, (0.0, ""))[0]:
                            worst[kind] = (ratio, name)
            if args.log_dir:
                os.makedirs(args.log_dir, exist_ok=True)
                with open(os.path.join(args.log_dir, label + ".log"), "w") as f:
                    f.write("\n".join(sorted(outputs)))
            failed_any |= counts["FAILED"] > 0
            line = ("%d passed, %d failed, %d skipped in %.0f s; largest error / tolerance: "
                    % (counts["passed"], counts["FAILED"], counts["skipped"],
                       time.time() - start)
                    + ", ".join("%s %.3f (%s)" % (kind, ratio, name)
                                for kind, (ratio, name) in sorted(worst.items())))
            print("%s (core %s), threads %d: %s" % (core, taken, threads, line))
            summary.append((core + " (" + taken + ")", threads, line))
    print("\nsummary")
    for core, threads, line in summary:
        print("  %-24s threads %s: %s" % (core, threads, line))
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
