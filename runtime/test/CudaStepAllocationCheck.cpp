//===- CudaStepAllocationCheck.cpp - multi-rank CUDA steps allocate nothing
//===//
//
// `mpiexec -n N tpcrt-cuda-step-allocations MODEL.tpcx`: the compiled
// multi-rank model's steps on the CUDA device of each rank, communicating
// through NCCL, with operator new counted around Interpreter::runStep: the
// second and third steps allocate nothing on any rank. What
// CudaStepAllocationTest.cpp counts on one rank, with the collectives,
// their NCCL groups and the waits on in-flight transfers in the step. Run
// through the CUDA backend compiled for the host (TPCRT_CUDA_BACKEND =
// libtpcrt-cuda-emulated.so, NCCL emulated between the ranks:
// test/gpu/emulated-check.sh allocations), whose own emulated runtime's
// allocations are left out (AllocationCounter.cpp's hook). Skipped (77)
// without MPI.
//
//===----------------------------------------------------------------------===//

#include "RankChecker.h"

#include "tpcrt/CudaBackend.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Weights.h"

#include <cstdio>
#include <memory>
#include <string>

using namespace tpcrt;
using namespace tpcrt::test;

/// Allocations through operator new so far (AllocationCounter.cpp).
long allocationCount();

namespace {

int run(Communicator &world, const std::string &path) {
  RankChecker check;
  check.rank = world.rank();
  LoadedExecutable file;
  Interpreter interpreter;
  std::unique_ptr<Device> device;
  CudaDeviceOptions options;
  localRankFromEnvironment(options.localRank, options.localRanks);
  HostInputs inputs;
  bool ready =
      check.ok("loading " + path, loadExecutable(path, file)) &&
      check.ok("the CUDA device", createCudaDevice(options, device)) &&
      check.ok(path, Interpreter::create(file.executable(), std::move(device),
                                         interpreter, &world)) &&
      check.ok("weights", initWeights(3, interpreter)) &&
      check.ok("inputs", syntheticInputs(5, interpreter.program(), inputs));
  // Every rank takes the same steps (the collectives need them all): one
  // that could not start ends the check on every rank first.
  if (failedOnAnyRank(world, check) || !ready)
    return 1;
  // The first step may settle what is made on first use; the next two
  // allocate nothing.
  for (int step = 1; step <= 3; ++step) {
    std::string what = path + ": step " + std::to_string(step);
    if (!check.ok(what, inputs.copyTo(interpreter)))
      break;
    long before = allocationCount();
    Status s = interpreter.runStep();
    long allocations = allocationCount() - before;
    if (!check.ok(what, s))
      break;
    ++check.checks;
    if (step > 1 && allocations != 0)
      check.fail(what + ": " + std::to_string(allocations) +
                 " host allocations on the CUDA device");
  }
  if (check.failures == 0)
    std::printf("rank %d of %d: %s: steps 2 and 3 on the CUDA device "
                "allocate nothing\n",
                check.rank, world.size(), path.c_str());
  return finishOnEveryRank(world, check);
}

} // namespace

int main(int argc, char **argv) {
  std::string path = argc == 2 ? argv[1] : "";
  return mpiCheckMain(argc != 2,
                      "mpiexec -n N tpcrt-cuda-step-allocations MODEL.tpcx",
                      [&](Communicator &world) { return run(world, path); });
}
