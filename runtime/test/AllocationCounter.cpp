//===- AllocationCounter.cpp - counts operator new in the test binary -----===//
//
// Replaces the global operator new of tpcrt-tests so that a test can check
// that running a step allocates nothing (InterpreterTest, and on the
// emulated CUDA device CudaStepAllocationTest). In its own file:
// seeing these definitions inline, GCC warns about free() on memory from the
// standard allocator.
//
//===----------------------------------------------------------------------===//

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> allocations{0};
/// Above zero while this thread runs code whose allocations are not the
/// tested code's: the emulated CUDA runtime's own (its queued operations,
/// fibers, staged copies) while a CUDA device under test calls it.
thread_local int ignoring = 0;
} // namespace

long allocationCount() { return allocations.load(); }

/// Looked up by the emulated CUDA runtime (runtime/test/emulation,
/// tpcrt::emu::Internal) in the process that loaded it; exported from the
/// test binaries that count (CMake: --export-dynamic-symbol).
extern "C" __attribute__((visibility("default"))) void
tpcrt_test_ignore_allocations(int delta) {
  ignoring += delta;
}

void *operator new(size_t size) {
  if (ignoring == 0)
    ++allocations;
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
