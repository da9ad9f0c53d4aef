//===- CudaEmulation.h - CUDA kernels on the host, for tests ----*- C++ -*-===//
//
// Just enough of CUDA's kernel language to run the CUDA backend's kernels
// (runtime/cuda/*.cu, *.cuh) on the CPU: the emulation tests
// (FlashEmulationTest.cpp, ...) and the emulated backend
// (libtpcrt-cuda-emulated.so, emulation/README.md) compile them with
// TPCRT_CUDA_EMULATION and emulation/ ahead on the include path, whose
// cuda_runtime_api.h, cuda_bf16.h, ... stand in for the toolkit's; the
// kernels' PTX wrappers call the functions below instead of their inline
// asm, and TPCRT_LAUNCH runs a launch's blocks here before it returns.
// Nothing here is a GPU run; it tests the kernels' indexing, masking,
// dropout and layouts, not the hardware.
//
// A block's threads are fibers of one host thread, run round robin: a
// thread runs until it waits at a barrier (__syncthreads, __syncwarp, or a
// warp collective: shuffle, ldmatrix, mma; or a warpgroup's wgmma), so a
// block runs the same way every time. TPCRT_EMULATION_SCHEDULE picks
// another order (schedule() below): the last thread first, one warp as
// far as it goes before the next, or that with random turns; a kernel
// whose result changes with it lacks a barrier (on a GPU: a race). Blocks
// of a launch are shared among a few host threads. Shared memory starts as
// 0xff bytes (a NaN in bf16, f16 and f32), so a tile read before its copy
// landed (or before it was written) shows.
// Misaligned or out-of-bounds shared memory accesses of the PTX, copies in
// flight at a thread's exit and collectives the warp never completes are
// reported by launch() instead of being performed; plain stores past the
// dynamic shared memory land in a guard after it, which launch() checks
// (plain loads there read NaNs).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_CUDAEMULATION_H
#define TPCRT_TEST_CUDAEMULATION_H

#include "tpcrt/Random.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <functional>
#include <math.h>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

//===- Language -----------------------------------------------------------===//

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1)
      : x(x), y(y), z(z) {}
};

// CUDA's vector types: their alignment is what makes a vectorized access
// of a misaligned address fail (the emulation checks it at the access).
struct alignas(8) float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};

//===- 16-bit floats ------------------------------------------------------===//

namespace tpcrt::emu {

/// Held while an emulated call runs (emulation/cuda_runtime_api.h), and by
/// each host thread that runs a launch's blocks: its host allocations
/// (queued operations, blocks, fibers, staged copies) are the emulation's,
/// not the device's. A test binary that counts a step's allocations
/// (runtime/test/AllocationCounter.cpp) exports
/// tpcrt_test_ignore_allocations, which this tells; elsewhere nothing.
struct Internal {
  Internal() { adjust(1); }
  ~Internal() { adjust(-1); }
  Internal(const Internal &) = delete;
  Internal &operator=(const Internal &) = delete;
  static void adjust(int delta) {
    using Hook = void (*)(int);
    static const Hook hook = reinterpret_cast<Hook>(
        dlsym(RTLD_DEFAULT, "tpcrt_test_ignore_allocations"));
    if (hook)
      hook(delta);
  }
};

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// float -> bf16, rounding to nearest even (as __float2bfloat16_rn).
inline uint16_t toBf16(float f) {
  uint32_t u = floatBits(f);
  if (std::isnan(f))
    return static_cast<uint16_t>((u >> 16) | 0x40); // a quiet NaN
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
inline float fromBf16(uint16_t b) { return bitsFloat(uint32_t(b) << 16); }

/// float -> IEEE half, rounding to nearest even (as __float2half_rn).
inline uint16_t toHalf(float f) {
  uint32_t x = floatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u)
    return sign | 0x7e00; // NaN
  if (x >= 0x477ff000u)
    return sign | 0x7c00; // >= 65520 rounds to infinity (or is one)
  if (x < 0x38800000u) {
    // Below 2^-14: a subnormal half, a multiple of 2^-24 (the scaling is
    // exact; nearbyint rounds to even).
    return sign | static_cast<uint16_t>(std::nearbyint(bitsFloat(x) * 0x1p24f));
  }
  // Rebias the exponent (127 -> 15) and round 23 mantissa bits to 10.
  uint32_t r = x - (112u << 23);
  r += 0xfff + ((r >> 13) & 1);
  return sign | static_cast<uint16_t>(r >> 13);
}
inline float fromHalf(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) { // zero or subnormal: m 2^-24
    float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31)
    return bitsFloat(sign | 0x7f800000u | (m << 13));
  return bitsFloat(sign | ((e + 112) << 23) | (m << 13));
}

} // namespace tpcrt::emu

/// The 16-bit types: their bits (cuda_bf16.h, cuda_fp16.h).
struct __nv_bfloat16 {
  uint16_t bits;
};
struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
struct __half {
  uint16_t bits;
};
struct alignas(4) __half2 {
  __half x, y;
};

inline float __bfloat162float(__nv_bfloat16 b) {
  return tpcrt::emu::fromBf16(b.bits);
}
inline float __half2float(__half h) { return tpcrt::emu::fromHalf(h.bits); }
inline float2 __bfloat1622float2(__nv_bfloat162 h) {
  return {__bfloat162float(h.x), __bfloat162float(h.y)};
}
inline float2 __half22float2(__half2 h) {
  return {__half2float(h.x), __half2float(h.y)};
}
inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi) {
  return {{tpcrt::emu::toBf16(lo)}, {tpcrt::emu::toBf16(hi)}};
}
inline __half2 __floats2half2_rn(float lo, float hi) {
  return {{tpcrt::emu::toHalf(lo)}, {tpcrt::emu::toHalf(hi)}};
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  return {tpcrt::emu::toBf16(f)};
}
inline __half __float2half_rn(float f) { return {tpcrt::emu::toHalf(f)}; }

//===- Execution ----------------------------------------------------------===//

namespace tpcrt::emu {

constexpr int kWarpSize = 32;
constexpr int kMaxThreads = 1024;
/// Bytes of each thread's stack (the kernels keep their tiles' fragments
/// in local arrays of a few KiB).
constexpr size_t kStackBytes = 256 * 1024;
/// Bytes after the dynamic shared memory that no store may change.
constexpr size_t kSharedGuardBytes = 4096;

/// A barrier among `count` threads: the last to arrive goes on, the others
/// yield until it has.
struct Barrier {
  int arrived = 0;
  uint64_t generation = 0;
};

/// What one lane puts where its warp's collectives read it.
struct LaneSlot {
  /// A shuffle's value (bits of a 32- or 64-bit value): shuffles alternate
  /// between the two (shuffleFrom).
  uint64_t value[2] = {};
  unsigned row = 0;   // ldmatrix: the shared address of one row
  unsigned a[4] = {}; // mma: the A fragment
  unsigned b[2] = {}; // mma: the B fragment
};

/// One cp.async (16 or 4 bytes).
struct Copy {
  unsigned char *dst;
  const unsigned char *src;
  bool valid;
  unsigned bytes;
};

/// When a cp.async's bytes reach shared memory: at the instruction (a later
/// write over a tile others still read shows), or at the wait_group that
/// covers it (a read before the wait shows).
enum class CopyTiming { AtIssue, AtWait };

/// Where a fiber stopped. On x86-64 a switch saves the callee-saved
/// registers, the SSE and x87 control words and the stack pointer
/// (emuSwitch below): no system call, unlike swapcontext, which saves the
/// signal mask; elsewhere ucontext.
struct Context {
#if defined(__x86_64__)
  void *sp = nullptr;
#else
  ucontext_t uc;
#endif
};

/// Which thread of a block runs next when one waits
/// (TPCRT_EMULATION_SCHEDULE):
///   forward         round robin from thread 0 (the default): every thread
///                   reaches its next wait before any goes past it
///   reverse         round robin from the last thread; the blocks of a
///                   launch last first too
///   warps           one warp runs until all its threads wait at
///                   __syncthreads (or end), then the warp before it: a
///                   warp runs ahead of the others as far as a GPU lets it
///                   (a shared-memory write another warp has not yet read
///                   shows)
///   shuffle[:SEED]  as warps, but the running warp's lanes take random
///                   turns and the next warp is a random one (seeded by
///                   SEED, default 0, and the block's index)
/// Any other value is refused at the first launch.
struct Schedule {
  enum Kind { Forward, Reverse, Warps, Shuffle } kind = Forward;
  uint64_t seed = 0;
  std::string error; // the bad value, if any
};
inline Schedule parseSchedule(const char *text) {
  Schedule s;
  std::string v = text ? text : "";
  if (v.empty() || v == "forward")
    return s;
  if (v == "reverse" || v == "warps") {
    s.kind = v == "reverse" ? Schedule::Reverse : Schedule::Warps;
    return s;
  }
  if (v.rfind("shuffle", 0) == 0) {
    s.kind = Schedule::Shuffle;
    const std::string seed = v.substr(7);
    if (seed.empty())
      return s;
    if (seed[0] == ':' && seed.size() > 1 && seed.size() <= 20 &&
        seed.find_first_not_of("0123456789", 1) == std::string::npos) {
      s.seed = std::stoull(seed.substr(1));
      return s;
    }
  }
  s.error = "TPCRT_EMULATION_SCHEDULE=" + v +
            ": expected forward, reverse, warps, shuffle or shuffle:SEED";
  return s;
}
/// The process's schedule, from the environment at the first use (tests
/// may assign another between launches).
inline Schedule &schedule() {
  static Schedule s = parseSchedule(std::getenv("TPCRT_EMULATION_SCHEDULE"));
  return s;
}

/// splitmix64: the shuffled schedule's draws.
inline uint64_t mixBits(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Block;

struct Thread {
  dim3 threadIdx, blockIdx;
  Block *block = nullptr;
  bool done = false;
  /// Shuffles this thread has taken part in (the parity picks the slot).
  uint64_t shuffles = 0;
  /// The barrier this thread waits at (none: null) while it stays at
  /// generation `waitsFor`.
  const Barrier *waitsAt = nullptr;
  uint64_t waitsFor = 0;
  Context context;
  char *stack = nullptr;                // kStackBytes, from the pool
  std::vector<Copy> open;               // issued, not committed
  std::deque<std::vector<Copy>> groups; // committed, not waited for
  /// wgmma.mma_async results not yet in their accumulators: `group` -1
  /// until commit_group, then the group's number (wgmmaCommits).
  /// `before` is d as it was at the instruction and `a`, `aRegisters` the
  /// A fragment's registers and their values then: none may change before
  /// the wait (the hardware reads and writes them meanwhile).
  struct PendingWgmma {
    float *d;
    std::vector<float> result;
    int64_t group;
    std::vector<float> before;
    const unsigned *a;
    unsigned aRegisters[4];
  };
  std::vector<PendingWgmma> wgmmaPending;
  int64_t wgmmaCommits = 0;
  /// A wgmma.fence since this thread's last wgmma.wait_group (or its
  /// start): required before a wgmma (conservatively: the PTX ISA asks for
  /// it where the registers it reads were written since).
  bool wgmmaFenced = false;
  /// cp.async copies of this thread landed since its last
  /// fence.proxy.async (wgmma reads shared memory through the async proxy).
  bool unfencedCopies = false;
};

/// The block one host thread runs: its threads and shared memory.
struct Block {
  dim3 gridDim, blockDim, blockIdx;
  CopyTiming timing = CopyTiming::AtWait;
  const std::function<void()> *kernel = nullptr;
  /// The dynamic shared memory: smemBytes, then the guard.
  std::vector<unsigned char> smem;
  size_t smemBytes = 0;
  std::vector<Thread> threads;
  Barrier all;
  std::vector<Barrier> warps;
  std::vector<Barrier> warpgroups; // of 4 warps (wgmma)
  /// Whether a thread arrived at the last __syncthreads with cp.async
  /// copies landed and no fence.proxy.async after them (`unfenced`), and
  /// the same for the barrier being gathered.
  bool unfenced = false, gatheringUnfenced = false;
  std::vector<LaneSlot> slots;
  Context scheduler;
  int current = 0;    // the running thread
  uint64_t draws = 0; // the shuffled schedule's state
  std::string error;

  Block() = default;
  Block(const Block &) = delete;
  Block &operator=(const Block &) = delete;
  ~Block(); // returns the threads' stacks to the pool

  void fault(const std::string &what) {
    if (error.empty())
      error = what;
  }
};

#if defined(__x86_64__)
// emuSwitch(&from, to): pushes the callee-saved registers and the MXCSR /
// x87 control words, stores the stack pointer in *from, loads `to` and pops
// the same from there; `ret` goes on where `to` stopped (or, for a fiber
// never run, into its entry: startContext). Weak and hidden: every
// translation unit that includes this header defines it.
extern "C" void tpcrt_emu_switch(void **from, void *to);
asm(R"(
  .text
  .weak tpcrt_emu_switch
  .hidden tpcrt_emu_switch
  .type tpcrt_emu_switch, @function
tpcrt_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tpcrt_emu_switch, .-tpcrt_emu_switch
)");

inline void switchContext(Context &from, Context &to) {
  tpcrt_emu_switch(&from.sp, to.sp);
}

/// A context that starts `entry` (which never returns) on the stack
/// [stack, stack + bytes): the frame emuSwitch pops, whose `ret` enters
/// `entry` as if called (the stack 16-byte aligned before the call).
inline void startContext(Context &c, char *stack, size_t bytes,
                         void (*entry)()) {
  auto top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t(15);
  auto *sp = reinterpret_cast<uint64_t *>(top);
  *--sp = 0;                                  // entry's return address
  *--sp = reinterpret_cast<uintptr_t>(entry); // emuSwitch's ret
  for (int r = 0; r < 6; ++r)                 // rbp rbx r12 r13 r14 r15
    *--sp = 0;
  --sp;
  uint32_t mxcsr;
  uint16_t fpucw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  std::memcpy(sp, &mxcsr, sizeof mxcsr);
  std::memcpy(reinterpret_cast<char *>(sp) + 4, &fpucw, sizeof fpucw);
  c.sp = sp;
}
#else
inline void switchContext(Context &from, Context &to) {
  swapcontext(&from.uc, &to.uc);
}
inline void startContext(Context &c, char *stack, size_t bytes,
                         void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
#endif

/// Fiber stacks, reused from launch to launch (their pages stay mapped).
struct StackPool {
  std::mutex mutex;
  std::vector<std::unique_ptr<char[]>> all;
  std::vector<char *> free;
};
inline StackPool &stackPool() {
  static StackPool pool;
  return pool;
}
inline char *acquireStack() {
  StackPool &pool = stackPool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  if (pool.free.empty()) {
    pool.all.emplace_back(new char[kStackBytes]);
    return pool.all.back().get();
  }
  char *stack = pool.free.back();
  pool.free.pop_back();
  return stack;
}
inline void releaseStack(char *stack) {
  StackPool &pool = stackPool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free.push_back(stack);
}

inline Block::~Block() {
  for (Thread &t : threads)
    if (t.stack)
      releaseStack(t.stack);
}

/// The thread running on this host thread.
inline thread_local Thread *running = nullptr;

inline Thread &self() { return *running; }
inline Block &block() { return *running->block; }
inline int linearThread() {
  const Thread &t = self();
  const Block &b = block();
  return static_cast<int>(t.threadIdx.x +
                          b.blockDim.x *
                              (t.threadIdx.y + b.blockDim.y * t.threadIdx.z));
}
inline int lane() { return linearThread() % kWarpSize; }
inline int warp() { return linearThread() / kWarpSize; }

/// Whether thread i has not ended and waits at no barrier that is still
/// closed.
inline bool canGoOn(const Block &b, int i) {
  const Thread &t = b.threads[i];
  return !t.done && (!t.waitsAt || t.waitsAt->generation != t.waitsFor);
}

/// The thread to run after b.current under schedule(), or -1 when none
/// can go on (all ended, or a deadlock).
inline int pickNext(Block &b) {
  const int n = static_cast<int>(b.threads.size());
  auto firstOf = [&](auto &&place, auto &&ok) {
    for (int k = 1; k <= n; ++k) {
      int i = place(k);
      if (ok(i))
        return i;
    }
    return -1;
  };
  auto goesOn = [&](int i) { return canGoOn(b, i); };
  switch (schedule().kind) {
  case Schedule::Forward:
    return firstOf([&](int k) { return (b.current + k) % n; }, goesOn);
  case Schedule::Reverse:
    return firstOf([&](int k) { return (b.current - k + n) % n; }, goesOn);
  case Schedule::Warps:
  case Schedule::Shuffle: {
    // One warp goes on while any of its lanes can: under Warps its next
    // lane, then the warps below it, each from its first lane; under
    // Shuffle a random lane, then a random warp's random lane.
    const bool random = schedule().kind == Schedule::Shuffle;
    const int warps = (n + kWarpSize - 1) / kWarpSize;
    auto inWarp = [&](int w, int after) {
      const int base = w * kWarpSize, lanes = std::min(kWarpSize, n - base);
      const int start =
          random ? static_cast<int>(mixBits(b.draws) % uint64_t(lanes))
                 : after - base;
      for (int k = 1; k <= lanes; ++k) {
        int i = base + (start + k) % lanes;
        if (canGoOn(b, i))
          return i;
      }
      return -1;
    };
    const int running = b.current / kWarpSize;
    if (int i = inWarp(running, b.current); i >= 0)
      return i;
    const int first =
        random ? static_cast<int>(mixBits(b.draws) % uint64_t(warps)) : 0;
    for (int d = 1; d <= warps; ++d) {
      int w = random ? (first + d) % warps : (running - d + warps) % warps;
      if (int i = inWarp(w, w * kWarpSize - 1); i >= 0)
        return i;
    }
    return -1;
  }
  }
  return -1;
}

/// Switches to the thread pickNext names, or back to the scheduler when
/// none can go on: every thread has ended, or (a fault) the others wait at
/// a barrier or warp collective that not every thread reaches.
inline void switchFrom(Thread &from) {
  Block &b = *from.block;
  const int next = pickNext(b);
  if (next < 0) {
    if (std::any_of(b.threads.begin(), b.threads.end(),
                    [](const Thread &t) { return !t.done; })) {
      b.fault("a barrier or warp collective that not every thread reaches");
    }
    switchContext(from.context, b.scheduler); // never resumed on deadlock
    return;
  }
  b.current = next;
  if (&b.threads[next] == &from)
    return; // it goes on
  running = &b.threads[next];
  switchContext(from.context, b.threads[next].context);
  running = &from; // resumed (on the same host thread)
}

inline void arrive(Barrier &barrier, int count) {
  Thread &t = self();
  uint64_t generation = barrier.generation;
  if (++barrier.arrived == count) {
    barrier.arrived = 0;
    ++barrier.generation;
    return;
  }
  t.waitsAt = &barrier;
  t.waitsFor = generation;
  while (barrier.generation == generation)
    switchFrom(t);
  t.waitsAt = nullptr;
}

/// bar.sync 0: every thread of the block.
inline void syncThreads() {
  Block &b = block();
  const int count = static_cast<int>(b.threads.size());
  b.gatheringUnfenced |= self().unfencedCopies;
  if (b.all.arrived + 1 == count) { // the barrier opens with this thread
    b.unfenced = b.gatheringUnfenced;
    b.gatheringUnfenced = false;
  }
  arrive(b.all, count);
}
/// The implicit convergence of a .sync.aligned warp instruction: all 32
/// lanes execute it together.
inline void syncWarp() {
  const int threads = static_cast<int>(block().threads.size());
  arrive(block().warps[warp()],
         std::min(kWarpSize, threads - warp() * kWarpSize));
}
/// The implicit convergence of a warpgroup instruction (wgmma): the 128
/// threads of warps 4 w .. 4 w + 3 execute it together.
inline void syncWarpgroup() {
  const int threads = static_cast<int>(block().threads.size());
  const int group = linearThread() / (4 * kWarpSize);
  arrive(block().warpgroups[group],
         std::min(4 * kWarpSize, threads - group * 4 * kWarpSize));
}
inline LaneSlot &slot(int laneOfWarp) {
  return block().slots[warp() * kWarpSize + laneOfWarp];
}

/// The shared-memory window an address names (cvta.to.shared: its offset
/// from the block's shared memory).
inline unsigned char *sharedMemory() { return block().smem.data(); }

/// The static shared variables (TPCRT_SHARED) this host thread's blocks
/// have declared: poisoned (0xff bytes) at every block's start, as the
/// dynamic shared memory is, so that a read of what the block never wrote
/// finds NaNs and garbage, not the last block's values (or zeros).
inline thread_local std::vector<std::pair<void *, size_t>> staticSharedRegions;
/// A TPCRT_SHARED declaration run by one of the block's threads: its first
/// run on this host thread poisons it (no thread can have written it
/// before); later blocks find it poisoned by poisonStaticShared.
inline void staticShared(void *address, size_t bytes) {
  for (const auto &region : staticSharedRegions)
    if (region.first == address)
      return;
  staticSharedRegions.emplace_back(address, bytes);
  std::memset(address, 0xff, bytes);
}
inline void poisonStaticShared() {
  for (const auto &[address, bytes] : staticSharedRegions)
    std::memset(address, 0xff, bytes);
}
inline unsigned sharedAddress(const void *p) {
  return static_cast<unsigned>(static_cast<const unsigned char *>(p) -
                               sharedMemory());
}
/// Whether [address, address + bytes) lies in shared memory, aligned to
/// `bytes`; a fault otherwise.
inline bool sharedOk(unsigned address, unsigned bytes, const char *what) {
  if (address % bytes == 0 && address + bytes <= block().smemBytes)
    return true;
  block().fault(std::string(what) + ": shared address " +
                std::to_string(address) + " misaligned or out of bounds");
  return false;
}

/// A `bytes`-wide vector access at `p` (CudaCommon.cuh's vectorAt): a
/// fault unless `p` is `bytes`-byte aligned, as on a GPU.
inline void checkAligned(const void *p, size_t bytes) {
  if (reinterpret_cast<uintptr_t>(p) % bytes == 0)
    return;
  char text[96];
  std::snprintf(text, sizeof text,
                "misaligned address %p for a %zu-byte access", p, bytes);
  block().fault(text);
}

/// bar.warp.sync with a full mask (__syncwarp()): the warp's 32 lanes.
inline void syncWarpMask(unsigned mask) {
  if (mask != 0xffffffffu) {
    block().fault("__syncwarp: only the full mask is emulated");
    return;
  }
  syncWarp();
}

/// A shuffle with a full mask: this lane gets lane source's value, every
/// lane taking part. Consecutive shuffles of a warp use the two values of
/// the slots in turn, so no barrier is needed after the read: a lane writes
/// the value this one read again only two shuffles on, past the next
/// shuffle's barrier, which no lane passes before every lane has read.
template <typename T> T shuffleFrom(T value, int source) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "32- or 64-bit values");
  const int turn = static_cast<int>(self().shuffles++ & 1);
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  slot(lane()).value[turn] = bits;
  syncWarp();
  bits = slot(source & 31).value[turn];
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}
/// shfl.sync.bfly with a full mask: lane l gets lane (l ^ mask)'s value.
template <typename T> T shuffleXor(T value, int laneMask) {
  return shuffleFrom(value, lane() ^ laneMask);
}
/// shfl.sync.idx with a full mask: every lane gets lane srcLane's value.
template <typename T> T shuffleIndex(T value, int srcLane) {
  return shuffleFrom(value, srcLane);
}

//===- PTX ----------------------------------------------------------------===//

inline void land(const Copy &c) {
  if (c.valid)
    std::memcpy(c.dst, c.src, c.bytes);
  else
    std::memset(c.dst, 0, c.bytes);
}

/// cp.async.{cg,ca}.shared.global [dst], [src], bytes, valid ? bytes : 0:
/// `bytes` (16 or 4) bytes, or (src-size 0) as many zeros; both addresses
/// aligned to `bytes`.
inline void cpAsync(void *dst, const void *src, bool valid, unsigned bytes) {
  unsigned address = sharedAddress(dst);
  if (!sharedOk(address, bytes, "cp.async"))
    return;
  if (valid && reinterpret_cast<uintptr_t>(src) % bytes != 0) {
    block().fault("cp.async: misaligned global address");
    return;
  }
  Copy c{static_cast<unsigned char *>(dst),
         static_cast<const unsigned char *>(src), valid, bytes};
  if (block().timing == CopyTiming::AtIssue) {
    land(c);
    self().unfencedCopies = true;
  } else
    self().open.push_back(c);
}
/// cp.async.commit_group: this thread's copies since the last commit become
/// a group (possibly empty).
inline void cpAsyncCommit() {
  Thread &t = self();
  t.groups.push_back(std::move(t.open));
  t.open.clear();
}
/// cp.async.wait_group n: all but the newest n of this thread's groups have
/// landed. (Other threads' copies are seen only after a barrier.)
inline void cpAsyncWait(int n) {
  Thread &t = self();
  while (static_cast<int>(t.groups.size()) > n) {
    for (const Copy &c : t.groups.front())
      land(c);
    t.unfencedCopies |= !t.groups.front().empty();
    t.groups.pop_front();
  }
}

inline uint16_t sharedHalf(unsigned address) {
  uint16_t v;
  std::memcpy(&v, sharedMemory() + address, sizeof(v));
  return v;
}

/// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lanes 8 i .. 8 i + 7
/// give the (16-byte aligned) addresses of rows 0..7 of matrix i; lane l
/// gets, in r[i], elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of
/// matrix i, or with .trans elements (2 (l % 4), l / 4) and
/// (2 (l % 4) + 1, l / 4).
inline void ldmatrix(unsigned (&r)[4], unsigned address, bool trans) {
  const bool ok = sharedOk(address, 16, "ldmatrix");
  slot(lane()).row = address;
  syncWarp();
  const int l = lane();
  for (int i = 0; i < 4; ++i) {
    uint16_t e[2] = {0xffff, 0xffff};
    for (int k = 0; k < 2; ++k) {
      const int row = trans ? 2 * (l % 4) + k : l / 4;
      const int col = trans ? l / 4 : 2 * (l % 4) + k;
      const unsigned rowAddress = slot(8 * i + row).row;
      if (ok && rowAddress % 16 == 0 && rowAddress + 16 <= block().smemBytes)
        e[k] = sharedHalf(rowAddress + 2 * col);
    }
    r[i] = unsigned(e[0]) | (unsigned(e[1]) << 16);
  }
  syncWarp();
}

inline float halfOf(unsigned pair, int high, bool bf16) {
  uint16_t v = static_cast<uint16_t>(high ? pair >> 16 : pair & 0xffff);
  return bf16 ? fromBf16(v) : fromHalf(v);
}

/// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32: c += a
/// b on the warp's 16 x 8 tile. With lane = 4 g + t, lane holds A (g,
/// 2t..2t+1) in a0, (g+8, ..) in a1, (g, 2t+8..) in a2, (g+8, 2t+8..) in
/// a3, B (k 2t..2t+1, n g) in b0, (k 2t+8.., n g) in b1 and C (g, 2t..2t+1)
/// in c0 c1, (g+8, ..) in c2 c3. The 16 products of a sum are exact in
/// double; it is rounded to fp32 once (the tensor cores are no more
/// precise).
inline void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1,
                bool bf16) {
  LaneSlot &mine = slot(lane());
  std::copy(a, a + 4, mine.a);
  mine.b[0] = b0;
  mine.b[1] = b1;
  syncWarp();
  const int g = lane() / 4, t = lane() % 4;
  float rows[2][16], cols[2][16]; // A rows g, g + 8; B columns 2t, 2t + 1
  for (int q = 0; q < 4; ++q) {   // the lanes 4 g + q hold row g of A
    const LaneSlot &s = slot(4 * g + q);
    for (int k = 0; k < 2; ++k) {
      rows[0][2 * q + k] = halfOf(s.a[0], k, bf16);
      rows[1][2 * q + k] = halfOf(s.a[1], k, bf16);
      rows[0][2 * q + 8 + k] = halfOf(s.a[2], k, bf16);
      rows[1][2 * q + 8 + k] = halfOf(s.a[3], k, bf16);
    }
  }
  for (int n = 0; n < 2; ++n) // the lanes 4 (2t + n) + q hold column 2t + n
    for (int q = 0; q < 4; ++q) {
      const LaneSlot &s = slot(4 * (2 * t + n) + q);
      for (int k = 0; k < 2; ++k) {
        cols[n][2 * q + k] = halfOf(s.b[0], k, bf16);
        cols[n][2 * q + 8 + k] = halfOf(s.b[1], k, bf16);
      }
    }
  syncWarp();
  for (int e = 0; e < 4; ++e) {
    double sum = c[e];
    for (int k = 0; k < 16; ++k)
      sum += double(rows[e >> 1][k]) * cols[e & 1][k];
    c[e] = static_cast<float>(sum);
  }
}

/// One 16-bit element of a wgmma operand in shared memory: element (mn, k)
/// (mn < M or N, k < 16) of the matrix its descriptor names. Descriptor
/// (PTX ISA, "Matrix Descriptor"): bits 0-13 the start address, 16-29 the
/// leading and 32-45 the stride byte offset (LBO, SBO), each >> 4; 49-51
/// the base offset; 62-63 the swizzle. Only the 128-byte swizzle (1) with
/// base offset 0 is emulated, in CUTLASS's canonical layouts (element
/// offsets, T = 8 elements = 16 bytes):
///   K-major  ((8, m), (T, 2)) : ((8T, SBO), (1, T))      (LBO unused)
///   MN-major ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO))
/// then bits 4-6 of the byte address XORed with bits 7-9.
inline bool wgmmaElement(uint64_t desc, int mn, int k, bool kMajor,
                         uint16_t &value) {
  const unsigned start = unsigned(desc & 0x3fff) << 4;
  const unsigned lbo = unsigned((desc >> 16) & 0x3fff) << 4;
  const unsigned sbo = unsigned((desc >> 32) & 0x3fff) << 4;
  if ((desc >> 62) != 1 || ((desc >> 49) & 7) != 0) {
    block().fault("wgmma: only the 128-byte swizzle with base offset 0 is "
                  "emulated");
    return false;
  }
  unsigned address = kMajor ? start + (mn % 8) * 128 + (mn / 8) * sbo + k * 2
                            : start + (mn % 64) * 2 + (mn / 64) * lbo +
                                  (k % 8) * 128 + (k / 8) * sbo;
  address ^= ((address >> 7) & 7) << 4;
  if (!sharedOk(address, 2, "wgmma"))
    return false;
  value = sharedHalf(address);
  return true;
}

/// wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16} with the
/// warpgroup's 128 threads: d = A B (+ d when scaleD), A 64 x 16 from
/// shared memory (descA, K-major) or, when `a` is given, from registers (as
/// mma.sync's A fragment, warp w of the group holding rows 16 w ..), B
/// 16 x N from shared memory (descB: K-major, or MN-major with transB).
/// Lane 4 g + t of warp w holds d rows 16 w + g (d[4 j], d[4 j + 1]: columns
/// 8 j + 2 t, + 1) and 16 w + g + 8 (d[4 j + 2], d[4 j + 3]). The operands
/// are read at the instruction (sums exact in double, rounded once; d's
/// value then is the last pending result into it, if any), but the result
/// reaches d only at the wait_group that covers it: a kernel that reads or
/// changes its accumulators before that wait sees (or loses) the
/// difference, as on a GPU it would race.
inline void wgmma(float *d, int n, const unsigned *a, uint64_t descA,
                  uint64_t descB, bool scaleD, bool transB, bool bf16) {
  if (block().unfenced)
    block().fault("wgmma: shared memory that cp.async wrote is read without a "
                  "fence.proxy.async before the last __syncthreads");
  if (!self().wgmmaFenced)
    block().fault("wgmma: no wgmma.fence since this thread's last "
                  "wgmma.wait_group (or its start): registers written before "
                  "it are not ordered before its reads");
  const int me = linearThread();
  const int group = me / (4 * kWarpSize), w = me / kWarpSize % 4;
  const int g = lane() / 4, t = lane() % 4;
  LaneSlot *slots = block().slots.data() + group * 4 * kWarpSize;
  if (a)
    std::copy(a, a + 4, slots[me % (4 * kWarpSize)].a);
  syncWarpgroup();
  float rows[2][16]; // A rows 16 w + g and + 8
  for (int half = 0; half < 2; ++half)
    for (int k = 0; k < 16; ++k) {
      if (a) { // lanes 4 g + q of warp w hold row g's pairs (mma's A)
        const LaneSlot &s = slots[w * kWarpSize + 4 * g + (k % 8) / 2];
        rows[half][k] = halfOf(s.a[half + 2 * (k / 8)], k % 2, bf16);
        continue;
      }
      uint16_t v = 0xffff;
      wgmmaElement(descA, 16 * w + g + 8 * half, k, true, v);
      rows[half][k] = bf16 ? fromBf16(v) : fromHalf(v);
    }
  Thread &thread = self();
  const float *in = d; // d as the instruction reads it
  for (auto p = thread.wgmmaPending.rbegin(); p != thread.wgmmaPending.rend();
       ++p)
    if (p->d == d) {
      in = p->result.data();
      break;
    }
  std::vector<float> result(static_cast<size_t>(n / 2));
  for (int j = 0; j < n / 8; ++j)
    for (int e = 0; e < 2; ++e) {
      float col[16];
      for (int k = 0; k < 16; ++k) {
        uint16_t v = 0xffff;
        wgmmaElement(descB, 8 * j + 2 * t + e, k, !transB, v);
        col[k] = bf16 ? fromBf16(v) : fromHalf(v);
      }
      for (int half = 0; half < 2; ++half) {
        double sum = scaleD ? in[4 * j + 2 * half + e] : 0.0;
        for (int k = 0; k < 16; ++k)
          sum += double(rows[half][k]) * col[k];
        result[4 * j + 2 * half + e] = static_cast<float>(sum);
      }
    }
  syncWarpgroup();
  Thread::PendingWgmma pending{
      d, std::move(result), -1, std::vector<float>(n / 2), a, {}};
  std::memcpy(pending.before.data(), d, pending.before.size() * sizeof(float));
  if (a)
    std::copy(a, a + 4, pending.aRegisters);
  thread.wgmmaPending.push_back(std::move(pending));
}
/// ex2.approx.ftz.f32: 2^x with subnormal inputs and results flushed to 0
/// (exactly rounded here; the hardware's approximation is within 2 ulp).
inline float exp2Ftz(float x) {
  if (std::fpclassify(x) == FP_SUBNORMAL)
    x = 0.0f;
  const float y = std::exp2(x);
  return std::fpclassify(y) == FP_SUBNORMAL ? 0.0f : y;
}
/// wgmma.fence.sync.aligned: this thread's register writes are ordered
/// before the wgmmas after it.
inline void wgmmaFence() { self().wgmmaFenced = true; }
/// fence.proxy.async.shared::cta: this thread's landed copies are visible
/// to wgmma (once a barrier has passed).
inline void fenceProxyAsync() { self().unfencedCopies = false; }
/// wgmma.commit_group: the wgmmas since the last commit become a group.
inline void wgmmaCommit() {
  Thread &t = self();
  bool any = false;
  for (Thread::PendingWgmma &p : t.wgmmaPending)
    if (p.group < 0) {
      p.group = t.wgmmaCommits;
      any = true;
    }
  t.wgmmaCommits += any;
}
/// wgmma.wait_group n: every committed group but the newest n is done: its
/// results reach their accumulators, in issue order.
inline void wgmmaWait(int n) {
  Thread &t = self();
  t.wgmmaFenced = false;
  const int64_t done = t.wgmmaCommits - n; // groups below this one
  // What the kernel changed while the hardware owned it (checked before
  // any result lands: results into one d follow each other).
  for (const Thread::PendingWgmma &p : t.wgmmaPending) {
    if (p.group < 0 || p.group >= done)
      continue;
    // Bytes, not floats: d may be uninitialized (or NaN) until its first
    // result.
    if (std::memcmp(p.before.data(), p.d, p.before.size() * sizeof(float)))
      t.block->fault("wgmma: its accumulator registers were written between "
                     "the instruction and the wgmma.wait_group that "
                     "completes it");
    if (p.a && std::memcmp(p.aRegisters, p.a, sizeof(p.aRegisters)))
      t.block->fault("wgmma: its A registers were written between the "
                     "instruction and the wgmma.wait_group that completes it");
  }
  std::vector<Thread::PendingWgmma> left;
  for (Thread::PendingWgmma &p : t.wgmmaPending) {
    if (p.group >= 0 && p.group < done)
      std::copy(p.result.begin(), p.result.end(), p.d);
    else
      left.push_back(std::move(p));
  }
  t.wgmmaPending = std::move(left);
}

//===- Launch -------------------------------------------------------------===//

inline void threadEntry() {
  Thread &t = self();
  (*t.block->kernel)();
  if (!t.open.empty() || !t.groups.empty())
    t.block->fault("a thread exits with cp.async copies not waited for");
  if (!t.wgmmaPending.empty())
    t.block->fault("a thread exits with wgmma operations not waited for");
  t.done = true;
  switchFrom(t); // never returns: the thread is done
}

/// Runs one block to its end (or its first deadlock).
inline void runBlock(Block &b) {
  const int n = static_cast<int>(b.threads.size());
  for (int i = 0; i < n; ++i) {
    Thread &t = b.threads[i];
    t.done = false;
    t.shuffles = 0;
    t.waitsAt = nullptr;
    t.open.clear();
    t.groups.clear();
    t.wgmmaPending.clear();
    t.wgmmaCommits = 0;
    t.wgmmaFenced = false;
    t.unfencedCopies = false;
    t.blockIdx = b.blockIdx;
    startContext(t.context, t.stack, kStackBytes, threadEntry);
  }
  b.all = Barrier();
  b.unfenced = b.gatheringUnfenced = false;
  std::fill(b.warps.begin(), b.warps.end(), Barrier());
  std::fill(b.warpgroups.begin(), b.warpgroups.end(), Barrier());
  b.draws = schedule().seed ^
            (uint64_t(b.blockIdx.x) |
             (uint64_t(b.blockIdx.y) << 24 | uint64_t(b.blockIdx.z) << 48));
  // The first turn: thread 0, the last thread, the last warp's first lane,
  // or anyone.
  switch (schedule().kind) {
  case Schedule::Forward:
    b.current = 0;
    break;
  case Schedule::Reverse:
    b.current = n - 1;
    break;
  case Schedule::Warps:
    b.current = (n - 1) / kWarpSize * kWarpSize;
    break;
  case Schedule::Shuffle:
    b.current = static_cast<int>(mixBits(b.draws) % uint64_t(n));
    break;
  }
  Thread &first = b.threads[b.current];
  running = &first;
  switchContext(b.scheduler, first.context);
  running = nullptr;
}

/// kernel<<<grid, threads, smemBytes>>>(): every block of the grid, shared
/// among up to `hostThreads` host threads. Returns the first fault of any
/// block (empty: none).
inline std::string launch(dim3 grid, dim3 threads, size_t smemBytes,
                          const std::function<void()> &kernel,
                          CopyTiming timing = CopyTiming::AtWait,
                          unsigned hostThreads = 0) {
  const int64_t blocks = int64_t(grid.x) * grid.y * grid.z;
  const int count = static_cast<int>(threads.x * threads.y * threads.z);
  if (!schedule().error.empty())
    return schedule().error;
  if (count <= 0 || count > kMaxThreads)
    return "launch: a block of " + std::to_string(count) + " threads (1 to " +
           std::to_string(kMaxThreads) + ")";
  if (hostThreads == 0)
    hostThreads = std::max(1u, std::thread::hardware_concurrency());
  const int64_t workers = std::min<int64_t>(hostThreads, blocks);
  std::mutex mutex;
  std::string error;
  auto work = [&](int64_t first) {
    Internal internal;
    Block b;
    b.gridDim = grid;
    b.blockDim = threads;
    b.timing = timing;
    b.kernel = &kernel;
    b.threads.resize(count);
    b.warps.resize((count + kWarpSize - 1) / kWarpSize);
    b.warpgroups.resize((count + 4 * kWarpSize - 1) / (4 * kWarpSize));
    b.slots.resize(b.warps.size() * kWarpSize);
    for (int i = 0; i < count; ++i) {
      Thread &t = b.threads[i];
      t.block = &b;
      t.stack = acquireStack();
      t.threadIdx = dim3(i % threads.x, i / threads.x % threads.y,
                         i / (threads.x * threads.y));
    }
    for (int64_t turn = first; turn < blocks; turn += workers) {
      const int64_t i =
          schedule().kind == Schedule::Reverse ? blocks - 1 - turn : turn;
      b.blockIdx = dim3(static_cast<unsigned>(i % grid.x),
                        static_cast<unsigned>(i / grid.x % grid.y),
                        static_cast<unsigned>(i / (int64_t(grid.x) * grid.y)));
      b.smemBytes = smemBytes;
      b.smem.assign(smemBytes + kSharedGuardBytes, 0xff);
      poisonStaticShared();
      runBlock(b);
      if (b.error.empty() &&
          std::any_of(b.smem.begin() + smemBytes, b.smem.end(),
                      [](unsigned char c) { return c != 0xff; }))
        b.fault("a store past the dynamic shared memory's " +
                std::to_string(smemBytes) + " bytes");
      if (!b.error.empty()) {
        std::lock_guard<std::mutex> lock(mutex);
        if (error.empty())
          error = "block (" + std::to_string(b.blockIdx.x) + ", " +
                  std::to_string(b.blockIdx.y) + ", " +
                  std::to_string(b.blockIdx.z) + "): " + b.error;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int64_t w = 1; w < workers; ++w)
    pool.emplace_back(work, w);
  if (workers > 0)
    work(0);
  for (std::thread &t : pool)
    t.join();
  return error;
}

} // namespace tpcrt::emu

//===- Built-in variables and functions -----------------------------------===//

#define threadIdx (::tpcrt::emu::self().threadIdx)
#define blockIdx (::tpcrt::emu::self().blockIdx)
#define blockDim (::tpcrt::emu::block().blockDim)
#define gridDim (::tpcrt::emu::block().gridDim)

inline void __syncthreads() { tpcrt::emu::syncThreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  tpcrt::emu::syncWarpMask(mask);
}
template <typename T>
inline T __shfl_xor_sync(unsigned /*mask*/, T value, int laneMask) {
  return tpcrt::emu::shuffleXor(value, laneMask);
}
template <typename T>
inline T __shfl_sync(unsigned /*mask*/, T value, int srcLane) {
  return tpcrt::emu::shuffleIndex(value, srcLane);
}
inline size_t __cvta_generic_to_shared(const void *p) {
  return tpcrt::emu::sharedAddress(p);
}

/// A kernel's static shared variables are declared with TPCRT_SHARED
/// (CudaCommon.cuh): one per host thread, shared by the fibers of the block
/// it runs (blocks on other host threads have theirs), poisoned at every
/// block's start (staticShared); unlike the dynamic shared memory, accesses
/// are not bounds checked. A plain __shared__ would be neither poisoned
/// nor per block, so it does not compile here.
#define __shared__ __shared__is_TPCRT_SHARED_in_emulated_kernels
#define TPCRT_SHARED(type, name, ...)                                          \
  static thread_local type name __VA_ARGS__;                                   \
  ::tpcrt::emu::staticShared(&name, sizeof(name))
#define TPCRT_DYNAMIC_SHARED(type, name, align)                                \
  type *const name = reinterpret_cast<type *>(::tpcrt::emu::sharedMemory())

/// fp32 operations rounded once, never fused into an FMA (the host build
/// targets no FMA unit anyway).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }

/// CUDA's integer min of device code.
inline int min(int a, int b) { return a < b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }

//===- Arithmetic ---------------------------------------------------------===//

inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }

/// atomicMin on a 64-bit word of global memory (blocks run on several host
/// threads).
inline unsigned long long atomicMin(unsigned long long *address,
                                    unsigned long long value) {
  unsigned long long old = __atomic_load_n(address, __ATOMIC_RELAXED);
  while (value < old &&
         !__atomic_compare_exchange_n(address, &old, value, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}

//===- Launches -----------------------------------------------------------===//

namespace tpcrt::emu {

/// Dynamic shared memory a block may have without cudaFuncSetAttribute, and
/// at most with it (sm_90: 227 KiB).
constexpr size_t kDefaultDynamicShared = 48 * 1024;
constexpr size_t kMostDynamicShared = 227 * 1024;

/// cudaFuncAttributeMaxDynamicSharedMemorySize as set per kernel.
inline std::mutex &attributeMutex() {
  static std::mutex mutex;
  return mutex;
}
inline std::vector<std::pair<const void *, size_t>> &sharedLimits() {
  static std::vector<std::pair<const void *, size_t>> limits;
  return limits;
}
inline void setSharedLimit(const void *kernel, size_t bytes) {
  std::lock_guard<std::mutex> lock(attributeMutex());
  for (auto &[k, limit] : sharedLimits())
    if (k == kernel) {
      limit = bytes;
      return;
    }
  sharedLimits().push_back({kernel, bytes});
}
inline size_t sharedLimit(const void *kernel) {
  std::lock_guard<std::mutex> lock(attributeMutex());
  for (const auto &[k, limit] : sharedLimits())
    if (k == kernel)
      return std::max(limit, kDefaultDynamicShared);
  return kDefaultDynamicShared;
}

/// What went wrong in the last launches, for cudaGetLastError
/// (emulation/cuda_runtime_api.h): a configuration the hardware refuses,
/// or a fault the emulation saw. `sticky` stays set, as a kernel fault
/// spoils a CUDA context: every later synchronization fails.
struct LaunchErrors {
  std::string last;   // cleared by cudaGetLastError
  std::string sticky; // never cleared
  bool configuration = false;
};
inline LaunchErrors &launchErrors() {
  static LaunchErrors errors;
  return errors;
}

} // namespace tpcrt::emu

#endif // TPCRT_TEST_CUDAEMULATION_H
