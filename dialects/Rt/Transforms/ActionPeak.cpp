//===- ActionPeak.cpp - rt-plan-memory for programs run by actions --------===//
//
// A program with `stage_actions` does not run its kernels once in file
// order: each stage runs an action list, every action one function (a range
// of kernels) for a microbatch and a pool slot. This file reads and checks
// that schedule, and measures the planned peak over the runs the way the
// runtime does (runtime/src/Lifetimes.cpp), from the IR alone: the offsets
// rt-plan-memory assigns are conservative, but the peak it records must be
// the one the runtime measures.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/PlanMemory.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>
#include <string>

using namespace mlir;
using namespace mlir::rt;

namespace {

/// The most slots a pool may have (the runtime's bound on the instances of
/// all buffers).
constexpr int64_t kMaxSlots = int64_t(1) << 26;

unsigned stageOf(KernelOp kernel) { return kernel.getStage().value_or(0); }

/// The pool of a pooled rt.alloc's buffer, else -1.
int64_t poolOf(Value buffer) {
  if (auto alloc = buffer.getDefiningOp<AllocOp>())
    if (IntegerAttr pool = alloc.getPoolAttr())
      return pool.getInt();
  return -1;
}

/// The buffer an rt.output or rt.grad binds, else null.
Value boundBuffer(Operation &op) {
  if (auto output = dyn_cast<OutputOp>(op))
    return output.getBuffer();
  if (auto grad = dyn_cast<GradOp>(op))
    return grad.getBuffer();
  return nullptr;
}

/// "function 3 ('F')".
std::string functionText(const ActionSchedule &schedule, int64_t function) {
  std::string text = "function " + std::to_string(function);
  StringRef name = schedule.functions[function].name;
  if (!name.empty())
    text += " ('" + name.str() + "')";
  return text;
}

/// Reads `functions`: disjoint ranges covering every kernel, each on one
/// stage of `numStages`.
LogicalResult readFunctions(ProgramOp program, ArrayRef<KernelOp> kernels,
                            unsigned numStages, ActionSchedule &schedule) {
  auto functions = program->getAttrOfType<ArrayAttr>("functions");
  if (!functions)
    return program.emitError("rt-plan-memory: 'stage_actions' runs "
                             "'functions', an array of {name, first, count}, "
                             "which the program lacks");
  int64_t numKernels = kernels.size();
  schedule.functionOf.assign(numKernels, -1);
  for (auto [f, attr] : llvm::enumerate(functions)) {
    auto dict = dyn_cast<DictionaryAttr>(attr);
    IntegerAttr first = dict ? dict.getAs<IntegerAttr>("first") : nullptr;
    IntegerAttr count = dict ? dict.getAs<IntegerAttr>("count") : nullptr;
    if (!first || !count)
      return program.emitError("rt-plan-memory: function ")
             << f << " is " << attr
             << ", not a dictionary with integers 'first' and 'count'";
    ActionSchedule::Function &function = schedule.functions.emplace_back();
    if (StringAttr name = dict.getAs<StringAttr>("name"))
      function.name = name.getValue();
    function.first = first.getInt();
    function.count = count.getInt();
    std::string what = "rt-plan-memory: " + functionText(schedule, f);
    if (function.count < 1 || function.first < 0 ||
        function.first > numKernels - function.count)
      return program.emitError(what)
             << ": kernels [" << function.first << ", +" << function.count
             << ") are not a non-empty range of the program's " << numKernels
             << " kernels";
    function.stage = stageOf(kernels[function.first]);
    if (function.stage >= numStages)
      return program.emitError(what)
             << ": its kernels are on stage " << function.stage << " of "
             << numStages << " ('stage_actions' has one list per stage)";
    for (int64_t k = function.first; k < function.first + function.count; ++k) {
      int64_t &owner = schedule.functionOf[k];
      if (owner >= 0)
        return kernels[k]->emitError(what)
               << " and " << functionText(schedule, owner)
               << " both hold kernel " << k
               << " (functions' kernels are disjoint)";
      owner = f;
      if (stageOf(kernels[k]) != function.stage)
        return kernels[k]->emitError(what)
               << ": kernel " << k << " is on stage " << stageOf(kernels[k])
               << ", kernel " << function.first << " on stage "
               << function.stage << " (a function's kernels are all of one "
               << "stage)";
    }
  }
  for (auto [k, owner] : llvm::enumerate(schedule.functionOf))
    if (owner < 0)
      return kernels[k]->emitError("rt-plan-memory: kernel ")
             << k << " is in no function (with 'stage_actions' every kernel "
             << "is in one)";
  return success();
}

/// Reads `pools`: each entry's slots.
LogicalResult readPools(ProgramOp program, ActionSchedule &schedule) {
  Attribute attr = program->getAttr("pools");
  if (!attr)
    return success();
  auto pools = dyn_cast<ArrayAttr>(attr);
  if (!pools)
    return program.emitError("rt-plan-memory: 'pools' is ")
           << attr << ", not an array of {slots}";
  for (auto [p, entry] : llvm::enumerate(pools)) {
    auto dict = dyn_cast<DictionaryAttr>(entry);
    IntegerAttr slots = dict ? dict.getAs<IntegerAttr>("slots") : nullptr;
    if (!slots)
      return program.emitError("rt-plan-memory: pool ")
             << p << " is " << entry
             << ", not a dictionary with an integer 'slots'";
    if (slots.getInt() < 1 || slots.getInt() > kMaxSlots)
      return program.emitError("rt-plan-memory: pool ")
             << p << " has " << slots.getInt() << " slots (from 1 to 2^26)";
    schedule.poolSlots.push_back(slots.getInt());
  }
  return success();
}

/// A pool belongs to one stage, and outputs and gradients are not pooled.
LogicalResult checkPooledBuffers(ProgramOp program, ArrayRef<KernelOp> kernels,
                                 const ActionSchedule &schedule) {
  SmallVector<KernelOp> firstUser(schedule.poolSlots.size());
  for (KernelOp kernel : kernels)
    for (Value buffer : kernel->getOperands()) {
      int64_t pool = poolOf(buffer);
      if (pool < 0)
        continue;
      KernelOp &user = firstUser[pool];
      if (!user) {
        user = kernel;
      } else if (stageOf(user) != stageOf(kernel)) {
        InFlightDiagnostic diag =
            kernel.emitError("rt-plan-memory: a kernel of stage ")
            << stageOf(kernel) << " uses a buffer of pool " << pool
            << ", which kernels of stage " << stageOf(user)
            << " use too (a pool's buffers are all of one stage)";
        diag.attachNote(buffer.getLoc()) << "the pooled buffer";
        diag.attachNote(user.getLoc()) << "a kernel of stage " << stageOf(user);
        return diag;
      }
    }
  for (Operation &op : program.getBody().front()) {
    Value bound = boundBuffer(op);
    if (bound && poolOf(bound) >= 0)
      return op.emitError("rt-plan-memory: binds a buffer of pool ")
             << poolOf(bound)
             << " (outputs and gradients are never pooled: one value each)";
  }
  return success();
}

/// Reads each stage's action list: functions of its stage, run with slots
/// (microbatches) that the pools (inputs by microbatch) they address hold.
LogicalResult readActions(ProgramOp program, ArrayAttr lists,
                          ArrayRef<KernelOp> kernels,
                          ActionSchedule &schedule) {
  // Per function, the pools its kernels address and the fewest microbatches
  // of an input by microbatch they read.
  size_t numFunctions = schedule.functions.size();
  std::vector<SmallVector<int64_t, 2>> poolsOf(numFunctions);
  std::vector<int64_t> microbatchesOf(numFunctions,
                                      std::numeric_limits<int64_t>::max());
  for (auto [k, kernel] : llvm::enumerate(kernels)) {
    int64_t f = schedule.functionOf[k];
    for (Value buffer : kernel->getOperands()) {
      int64_t pool = poolOf(buffer);
      if (pool >= 0 && !llvm::is_contained(poolsOf[f], pool))
        poolsOf[f].push_back(pool);
      if (auto input = buffer.getDefiningOp<InputOp>())
        if (IntegerAttr microbatches = input.getMicrobatchesAttr())
          microbatchesOf[f] =
              std::min(microbatchesOf[f], microbatches.getInt());
    }
  }
  for (auto [stage, listAttr] : llvm::enumerate(lists)) {
    auto list = dyn_cast<ArrayAttr>(listAttr);
    if (!list)
      return program.emitError("rt-plan-memory: 'stage_actions' entry ")
             << stage << " is " << listAttr << ", not an array of actions";
    auto &actions = schedule.stageActions.emplace_back();
    for (auto [a, actionAttr] : llvm::enumerate(list)) {
      auto triple = dyn_cast<DenseI64ArrayAttr>(actionAttr);
      if (!triple || triple.size() != 3)
        return program.emitError("rt-plan-memory: stage ")
               << stage << ": action " << a << " is " << actionAttr
               << ", not an array<i64: function, microbatch, slot>";
      ActionSchedule::Action action{triple[0], triple[1], triple[2]};
      std::string what = "rt-plan-memory: stage " + std::to_string(stage) +
                         ": action " + std::to_string(a);
      if (action.function < 0 ||
          action.function >= static_cast<int64_t>(numFunctions))
        return program.emitError(what) << " runs function " << action.function
                                       << " of " << numFunctions;
      what += " (" + functionText(schedule, action.function) + ", microbatch " +
              std::to_string(action.microbatch) + ", slot " +
              std::to_string(action.slot) + ")";
      if (action.microbatch < 0 || action.slot < 0)
        return program.emitError(what) << ": a negative microbatch or slot";
      unsigned functionStage = schedule.functions[action.function].stage;
      if (functionStage != stage)
        return program.emitError(what)
               << ": the function's kernels are on stage " << functionStage
               << " (an action runs a function of its own stage)";
      for (int64_t pool : poolsOf[action.function])
        if (action.slot >= schedule.poolSlots[pool])
          return program.emitError(what)
                 << ": its kernels address pool " << pool << ", whose "
                 << schedule.poolSlots[pool] << " slots do not hold slot "
                 << action.slot;
      if (action.microbatch >= microbatchesOf[action.function])
        return program.emitError(what)
               << ": its kernels read an input pooled by microbatch, which "
               << "holds " << microbatchesOf[action.function]
               << " microbatches";
      actions.push_back(action);
    }
  }
  return success();
}

} // namespace

FailureOr<std::optional<ActionSchedule>>
mlir::rt::readActionSchedule(ProgramOp program) {
  Block &body = program.getBody().front();
  Attribute listsAttr = program->getAttr("stage_actions");
  if (!listsAttr) {
    // Only actions address pool slots.
    for (AllocOp alloc : body.getOps<AllocOp>())
      if (IntegerAttr pool = alloc.getPoolAttr())
        return alloc.emitError("rt-plan-memory: a buffer of pool ")
               << pool.getInt()
               << " in a program without 'stage_actions' (only actions "
                  "address pool slots)";
    return std::optional<ActionSchedule>();
  }
  auto lists = dyn_cast<ArrayAttr>(listsAttr);
  if (!lists)
    return program.emitError("rt-plan-memory: 'stage_actions' is ")
           << listsAttr << ", not an array of action lists (one per stage)";
  // One list per stage of the "pp" mesh axis, else one.
  unsigned numStages = 1;
  if (MeshAttr mesh = program.getMeshAttr())
    if (std::optional<unsigned> axis = mesh.getAxisIndex("pp"))
      numStages = mesh.getSizes()[*axis];
  if (lists.size() != numStages)
    return program.emitError("rt-plan-memory: expected one action list per "
                             "stage in 'stage_actions' (")
           << numStages << " stages), found " << lists.size();

  ActionSchedule schedule;
  SmallVector<KernelOp> kernels(body.getOps<KernelOp>());
  if (failed(readFunctions(program, kernels, numStages, schedule)) ||
      failed(readPools(program, schedule)) ||
      failed(checkPooledBuffers(program, kernels, schedule)) ||
      failed(readActions(program, lists, kernels, schedule)))
    return failure();
  return std::optional<ActionSchedule>(std::move(schedule));
}

int64_t mlir::rt::computeActionPeak(ProgramOp program,
                                    const ActionSchedule &schedule,
                                    unsigned stage,
                                    function_ref<bool(Value)> counts) {
  constexpr int64_t kUnwritten = -2;
  Block &body = program.getBody().front();
  // The bytes a buffer's instance counts (0 where `counts` declines it)
  // and its instances: a pooled buffer has one per slot; params, state and
  // inputs (-1) persist, every slot from load to the end.
  struct Info {
    int64_t bytes = 0;
    int64_t firstInstance = -1;
    bool pooled = false;
    bool onStage = false;
    bool used = false;
  };
  DenseMap<Value, unsigned> index;
  SmallVector<Info> buffers;
  SmallVector<KernelOp> kernels;
  std::vector<int64_t> instanceBytes;
  for (Operation &op : body) {
    if (auto kernel = dyn_cast<KernelOp>(op)) {
      kernels.push_back(kernel);
      for (Value buffer : op.getOperands()) {
        Info &info = buffers[index.lookup(buffer)];
        info.used = true;
        info.onStage |= stageOf(kernel) == stage;
      }
      continue;
    }
    if (!isa<ParamOp, InputOp, StateOp, AllocOp>(op))
      continue;
    Value buffer = op.getResult(0);
    index[buffer] = buffers.size();
    Info &info = buffers.emplace_back();
    if (!counts || counts(buffer))
      info.bytes = getBufferBytes(cast<MemRefType>(buffer.getType()));
    if (auto input = dyn_cast<InputOp>(op))
      if (IntegerAttr microbatches = input.getMicrobatchesAttr())
        info.bytes *= microbatches.getInt();
    if (!isa<AllocOp>(op))
      continue;
    int64_t pool = poolOf(buffer);
    info.pooled = pool >= 0;
    info.firstInstance = instanceBytes.size();
    instanceBytes.resize(instanceBytes.size() +
                             (info.pooled ? schedule.poolSlots[pool] : 1),
                         info.bytes);
  }
  // The persistent buffers the stage owns: those its kernels use, and on
  // stage 0 those no kernel uses.
  int64_t persistent = 0;
  for (const Info &info : buffers)
    if (info.firstInstance < 0 && (info.onStage || (!info.used && stage == 0)))
      persistent += info.bytes;

  // Time: 0 at load, 1 + r at the r-th kernel run, 1 + runs at the end.
  const auto &actions = schedule.stageActions[stage];
  int64_t runs = 0;
  for (const ActionSchedule::Action &action : actions)
    runs += schedule.functions[action.function].count;
  std::vector<int64_t> delta(runs + 3, 0);
  // Each instance's current interval of runs and the action that last
  // touched it.
  size_t numInstances = instanceBytes.size();
  std::vector<int64_t> first(numInstances, kUnwritten), last(numInstances),
      touchedBy(numInstances, -1);
  auto close = [&](int64_t i) {
    delta[first[i] + 1] += instanceBytes[i];
    delta[last[i] + 2] -= instanceBytes[i];
    first[i] = kUnwritten;
  };
  int64_t run = 0;
  for (auto [a, action] : llvm::enumerate(actions)) {
    auto instanceOf = [&, &action = action](Value buffer) -> int64_t {
      const Info &info = buffers[index.lookup(buffer)];
      if (info.firstInstance < 0)
        return -1;
      return info.firstInstance + (info.pooled ? action.slot : 0);
    };
    const ActionSchedule::Function &function =
        schedule.functions[action.function];
    for (KernelOp kernel :
         ArrayRef(kernels).slice(function.first, function.count)) {
      for (Value buffer : kernel.getInputs()) {
        int64_t i = instanceOf(buffer);
        if (i < 0)
          continue;
        if (first[i] == kUnwritten)
          first[i] = run;
        last[i] = run;
        touchedBy[i] = a;
      }
      // A write by an action that has not touched the instance yet (not as
      // an operand of this kernel either) starts a new interval: the value
      // of an earlier action is dead from here on.
      for (Value buffer : kernel.getOutputs()) {
        int64_t i = instanceOf(buffer);
        if (i < 0)
          continue;
        if (first[i] != kUnwritten && touchedBy[i] != static_cast<int64_t>(a))
          close(i);
        if (first[i] == kUnwritten)
          first[i] = run;
        last[i] = run;
        touchedBy[i] = a;
      }
      ++run;
    }
  }
  // An output's or a gradient's last interval runs to the end (they are
  // never pooled).
  for (Operation &op : body) {
    Value bound = boundBuffer(op);
    if (!bound)
      continue;
    int64_t i = buffers[index.lookup(bound)].firstInstance;
    if (i >= 0 && first[i] != kUnwritten)
      last[i] = runs;
  }
  for (size_t i = 0; i < numInstances; ++i)
    if (first[i] != kUnwritten)
      close(i);
  int64_t live = 0, peak = 0;
  for (int64_t d : ArrayRef(delta).drop_back()) {
    live += d;
    peak = std::max(peak, live);
  }
  return persistent + peak;
}
