//===- Actions.cpp - functions, pools and the stages' action lists --------===//
//
// With Executable.stage_actions a stage's step is not its kernels in file
// order but its action list: each action runs a function (a range of the
// file's kernels, all of one stage) with a microbatch index and a pool
// slot, so that a function compiled once runs once per microbatch and the
// executable does not grow with the microbatches. A by_microbatch pool is
// addressed at the action's microbatch, any other pool at the action's slot
// mod its slots (tpc-compile numbers an action's slot by its microbatch, so
// a pool of S slots holds microbatch i in slot i mod S). readActions reads and
// checks functions, pools and actions; the buffers' pool index, stride and
// the arena bounds of their last slot are checked with the buffers
// (Executable.cpp), the lifetimes over the runs in Lifetimes.cpp.
//
//===----------------------------------------------------------------------===//

#include "ProgramChecks.h"
#include "tpcrt/KernelTable.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

using namespace tpcrt;

namespace {

template <typename T> uint32_t sizeOf(const flatbuffers::Vector<T> *v) {
  return v ? v->size() : 0;
}

std::string plural(uint64_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

/// "kernel 3 (linear)" from the file (every opcode checked known).
std::string fileKernelText(const fb::Executable &exe, uint32_t k) {
  return "kernel " + std::to_string(k) + " (" +
         kernelInfo(exe.kernels()->Get(k)->op())->name + ")";
}

} // namespace

std::string tpcrt::functionText(const Program &program, uint32_t function) {
  std::string text = "function " + std::to_string(function);
  if (function < program.functions.size() &&
      !program.functions[function].name.empty())
    text += " ('" + program.functions[function].name + "')";
  return text;
}

std::string tpcrt::actionText(const Program &program, size_t index,
                              const ActionRef &action) {
  return "action " + std::to_string(index) + " (" +
         functionText(program, action.function) + ", microbatch " +
         std::to_string(action.microbatch) + ", slot " +
         std::to_string(action.slot) + ")";
}

Status tpcrt::checkPool(const fb::Pool &pool, uint32_t index) {
  std::string what = "pool " + std::to_string(index);
  if (pool.slots() == 0)
    return Status::error(what + ": 0 slots (a pool has at least one)");
  if (pool.stride() % 64 != 0)
    return Status::error(what + ": stride " + std::to_string(pool.stride()) +
                         " is not a multiple of 64");
  return Status::ok();
}

Status tpcrt::readActions(const fb::Executable &exe, Program &program) {
  uint32_t numKernels = sizeOf(exe.kernels());
  uint32_t numLists = sizeOf(exe.stage_actions());
  uint32_t numFunctions = sizeOf(exe.functions());
  uint32_t numPools = sizeOf(exe.pools());

  for (uint32_t p = 0; p < numPools; ++p) {
    const fb::Pool *pool = exe.pools()->Get(p);
    if (Status s = checkPool(*pool, p); !s)
      return s;
    program.pools.push_back(
        {pool->slots(), pool->stride(), pool->by_microbatch()});
  }
  if (numLists == 0) {
    if (numFunctions)
      return Status::error("the executable has " +
                           plural(numFunctions, "function") +
                           " but no stage_actions to run them");
    if (numPools)
      return Status::error("the executable has " + plural(numPools, "pool") +
                           " but no stage_actions (only actions address "
                           "pool slots)");
    return Status::ok();
  }
  if (numLists != program.numStages)
    return Status::error(
        "stage_actions has " + std::to_string(numLists) +
        (numLists == 1 ? " entry" : " entries") + ", expected one per stage: " +
        std::to_string(program.numStages) +
        (program.stageAxis < 0 ? " (the executable has no \"pp\" mesh axis)"
                               : ""));
  if (numFunctions == 0)
    return Status::error("the executable has stage_actions but no functions");

  // Functions: ranges of one stage, disjoint, covering every kernel.
  std::vector<int64_t> owner(numKernels, -1);
  for (uint32_t f = 0; f < numFunctions; ++f) {
    const fb::Function *function = exe.functions()->Get(f);
    FunctionRef ref;
    if (function->name())
      ref.name = function->name()->str();
    ref.firstKernel = function->first_kernel();
    ref.kernelCount = function->kernel_count();
    program.functions.push_back(ref);
    std::string what = functionText(program, f);
    if (ref.kernelCount == 0)
      return Status::error(what + ": no kernels (kernel_count 0)");
    if (ref.firstKernel >= numKernels ||
        ref.kernelCount > numKernels - ref.firstKernel)
      return Status::error(what + ": kernels [" +
                           std::to_string(ref.firstKernel) + ", +" +
                           std::to_string(ref.kernelCount) +
                           ") lie outside the executable's " +
                           plural(numKernels, "kernel"));
    ref.stage = exe.kernels()->Get(ref.firstKernel)->stage();
    program.functions.back().stage = ref.stage;
    for (uint32_t k = ref.firstKernel; k < ref.firstKernel + ref.kernelCount;
         ++k) {
      if (owner[k] >= 0)
        return Status::error(functionText(program, owner[k]) + " and " + what +
                             " both hold " + fileKernelText(exe, k) +
                             " (functions' kernels are disjoint)");
      owner[k] = f;
      uint32_t stage = exe.kernels()->Get(k)->stage();
      if (stage != ref.stage)
        return Status::error(what + ": " + fileKernelText(exe, k) +
                             " is on stage " + std::to_string(stage) + ", " +
                             fileKernelText(exe, ref.firstKernel) +
                             " on stage " + std::to_string(ref.stage) +
                             " (a function's kernels are all of one stage)");
    }
  }
  for (uint32_t k = 0; k < numKernels; ++k)
    if (owner[k] < 0)
      return Status::error(fileKernelText(exe, k) +
                           " is in no function (with stage_actions every "
                           "kernel is in one)");

  // The pools each function's kernels address.
  std::vector<std::vector<uint32_t>> poolsOf(numFunctions);
  std::vector<uint32_t> seen(numPools, UINT32_MAX);
  auto note = [&](uint32_t f, uint32_t buffer) {
    int32_t pool = program.buffers[buffer].pool;
    if (pool >= 0 && seen[pool] != f) {
      seen[pool] = f;
      poolsOf[f].push_back(static_cast<uint32_t>(pool));
    }
  };
  for (uint32_t f = 0; f < numFunctions; ++f) {
    const FunctionRef &ref = program.functions[f];
    for (uint32_t k = ref.firstKernel; k < ref.firstKernel + ref.kernelCount;
         ++k) {
      const fb::Kernel *kernel = exe.kernels()->Get(k);
      if (kernel->operands())
        for (uint32_t id : *kernel->operands())
          note(f, id);
      if (kernel->results())
        for (uint32_t id : *kernel->results())
          note(f, id);
    }
  }

  // The slots of the pools that are not by_microbatch and that kernels
  // address (at most the buffers' instances), numbered: pool p's slot s is
  // slotBase[p] + s (an action addresses s = action.slot mod the slots).
  std::vector<size_t> slotBase(numPools, SIZE_MAX);
  size_t numSlots = 0;
  for (const std::vector<uint32_t> &pools : poolsOf)
    for (uint32_t p : pools)
      if (!program.pools[p].byMicrobatch && slotBase[p] == SIZE_MAX) {
        slotBase[p] = numSlots;
        numSlots += program.pools[p].slots;
      }

  // Actions: a function of the stage, microbatches its by_microbatch pools
  // have (any other pool takes the action's slot mod its slots).
  for (uint32_t stage = 0; stage < numLists; ++stage) {
    const fb::StageActions *list = exe.stage_actions()->Get(stage);
    std::vector<ActionRef> actions;
    for (uint32_t a = 0, n = sizeOf(list->actions()); a < n; ++a) {
      const fb::Action *action = list->actions()->Get(a);
      ActionRef ref;
      ref.function = action->function();
      ref.microbatch = action->microbatch();
      ref.slot = action->slot();
      // (Worded only for an error: a step may have thousands of actions.)
      auto what = [&] {
        return "stage " + std::to_string(stage) + ": " +
               actionText(program, a, ref);
      };
      if (ref.function >= numFunctions)
        return Status::error(what() + ": the executable has " +
                             plural(numFunctions, "function"));
      const FunctionRef &function = program.functions[ref.function];
      if (function.stage != stage)
        return Status::error(what() + ": the function's kernels are on stage " +
                             std::to_string(function.stage) +
                             " (an action runs a function of its own stage)");
      for (uint32_t p : poolsOf[ref.function]) {
        const PoolRef &pool = program.pools[p];
        if (pool.byMicrobatch && ref.microbatch >= pool.slots)
          return Status::error(
              what() + ": its kernels address pool " + std::to_string(p) +
              ", whose " + plural(pool.slots, "slot") +
              " do not hold microbatch " + std::to_string(ref.microbatch) +
              " (a by_microbatch pool: the slot is the microbatch)");
      }
      actions.push_back(ref);
    }
    // A slot of a pool that is not by_microbatch (action.slot mod the
    // pool's slots) holds one microbatch's values from its first action to
    // its last: another microbatch may take it only then. First each
    // (slot, microbatch)'s last action on the slot, then the switches of a
    // slot from one microbatch to the next in action order.
    auto key = [](size_t slot, uint32_t microbatch) {
      return (static_cast<uint64_t>(slot) << 32) | microbatch;
    };
    std::unordered_map<uint64_t, size_t> lastOn;
    lastOn.reserve(actions.size());
    for (size_t a = 0; a < actions.size(); ++a)
      for (uint32_t p : poolsOf[actions[a].function]) {
        const PoolRef &pool = program.pools[p];
        if (!pool.byMicrobatch)
          lastOn[key(slotBase[p] + actions[a].slot % pool.slots,
                     actions[a].microbatch)] = a;
      }
    std::vector<uint32_t> holder(numSlots, UINT32_MAX);
    for (size_t a = 0; a < actions.size(); ++a)
      for (uint32_t p : poolsOf[actions[a].function]) {
        const PoolRef &pool = program.pools[p];
        if (pool.byMicrobatch)
          continue;
        size_t slot = slotBase[p] + actions[a].slot % pool.slots;
        uint32_t &held = holder[slot];
        if (held != UINT32_MAX && held != actions[a].microbatch) {
          size_t until = lastOn[key(slot, held)];
          if (until > a) {
            const ActionRef &action = actions[a];
            return Status::error(
                "stage " + std::to_string(stage) + ": " +
                actionText(program, a, action) + ": slot " +
                std::to_string(action.slot % pool.slots) + " of pool " +
                std::to_string(p) + " still holds microbatch " +
                std::to_string(held) + ", whose last action is " +
                actionText(program, until, actions[until]) +
                " (a slot is reused only after its microbatch's last "
                "action)");
          }
        }
        held = actions[a].microbatch;
      }
    program.stageActions.push_back(std::move(actions));
  }
  return Status::ok();
}
