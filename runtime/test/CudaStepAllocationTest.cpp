//===- CudaStepAllocationTest.cpp - a CUDA step allocates nothing ---------===//
//
// The CUDA device's steps allocate no host memory once the first has run
// (docs/runtime/cuda.md, "One allocation per rank"), as the CPU device's
// (InterpreterTest): operator new is counted around Interpreter::runStep on
// compiled models, through the CUDA backend compiled for the host
// (libtpcrt-cuda-emulated.so, named by TPCRT_CUDA_BACKEND), whose own
// emulated runtime's allocations are left out (AllocationCounter.cpp's
// hook). Disabled unless runtime.CudaStepAllocations runs it with the
// models (runtime/test/gemm_spec_models.sh); one-rank models only
// (CudaStepAllocationCheck.cpp counts multi-rank steps under mpiexec).
//
//===----------------------------------------------------------------------===//

#include "ModelPrograms.h"

#include "tpcrt/CudaBackend.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Weights.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

/// Allocations through operator new so far (AllocationCounter.cpp).
long allocationCount();

namespace tpcrt {
namespace {

TEST(CudaStepAllocations, DISABLED_ModelStepsAllocateNothing) {
  size_t checked = 0;
  for (const std::string &path : test::modelPaths()) {
    SCOPED_TRACE(path);
    LoadedExecutable file;
    Program program;
    test::loadProgram(path, file, program);
    ASSERT_FALSE(HasFatalFailure());
    if (program.mesh.worldSize() > 1)
      continue; // a mesh needs its ranks
    std::unique_ptr<Device> device;
    Status s = createCudaDevice(CudaDeviceOptions(), device);
    ASSERT_TRUE(s.isOk()) << s.message();
    Interpreter interpreter;
    s = Interpreter::create(file.executable(), std::move(device), interpreter);
    ASSERT_TRUE(s.isOk()) << s.message();
    HostInputs inputs;
    s = initWeights(3, interpreter);
    if (s)
      s = syntheticInputs(5, interpreter.program(), inputs);
    ASSERT_TRUE(s.isOk()) << s.message();
    // The first step may settle what is made on first use; the next two
    // allocate nothing.
    for (int step = 0; step < 3; ++step) {
      ASSERT_TRUE(inputs.copyTo(interpreter).isOk());
      long before = allocationCount();
      s = interpreter.runStep();
      long allocations = allocationCount() - before;
      ASSERT_TRUE(s.isOk()) << s.message();
      if (step > 0) {
        EXPECT_EQ(allocations, 0) << "step " << step + 1;
      }
    }
    if (!HasFailure())
      std::printf("%s: steps 2 and 3 on the CUDA device allocate nothing\n",
                  path.c_str());
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

} // namespace
} // namespace tpcrt
