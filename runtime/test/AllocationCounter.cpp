//===- AllocationCounter.cpp - counts operator new in the test binary -----===//
//
// Replaces the global operator new of tpcrt-tests so that a test can check
// that running a step allocates nothing (InterpreterTest). In its own file:
// seeing these definitions inline, GCC warns about free() on memory from the
// standard allocator.
//
//===----------------------------------------------------------------------===//

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> allocations{0};
} // namespace

long allocationCount() { return allocations.load(); }

void *operator new(size_t size) {
  ++allocations;
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
