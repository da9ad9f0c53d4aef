//===- ActionPeak.cpp - rt-plan-memory for programs run by actions --------===//
//
// A program with `stage_actions` does not run its kernels once in file
// order: each stage runs an action list, every action one function (a range
// of kernels) for a microbatch and a pool slot. This file reads and checks
// that schedule, and measures the planned peak over the runs the way the
// runtime does (runtime/src/Lifetimes.cpp), from the IR alone: the offsets
// rt-plan-memory assigns are conservative, but the peak it records must be
// the one the runtime measures. Without replaying every kernel of every
// action: a buffer whose every run starts a new interval is live the same
// way in each run, so each function's are summed up once (its profile) and
// only the touches of the others are replayed, action by action.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/PlanMemory.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
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

/// Reads each stage's action list: functions of its stage, run with
/// microbatches that the inputs pooled by microbatch they read hold, a
/// pool slot (the action's slot modulo the pool's) taken only after the
/// microbatch holding it is done with it.
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
    auto list = dyn_cast<DenseI64ArrayAttr>(listAttr);
    if (!list || list.size() % 3 != 0)
      return program.emitError("rt-plan-memory: 'stage_actions' entry ")
             << stage << " is " << listAttr
             << ", not an array<i64: function, microbatch, slot, ...> (three "
                "integers per action)";
    auto &actions = schedule.stageActions.emplace_back();
    actions.reserve(list.size() / 3);
    for (size_t a = 0, e = list.size() / 3; a < e; ++a) {
      ActionSchedule::Action action{list[3 * a], list[3 * a + 1],
                                    list[3 * a + 2]};
      // The message's subject, written only for an error: there is an
      // action per function and microbatch.
      auto fail = [&, stage = stage, a = a]() {
        InFlightDiagnostic diag = program.emitError("rt-plan-memory: stage ")
                                  << stage << ": action " << a;
        if (action.function >= 0 &&
            action.function < static_cast<int64_t>(numFunctions))
          diag << " (" << functionText(schedule, action.function)
               << ", microbatch " << action.microbatch << ", slot "
               << action.slot << ")";
        return diag;
      };
      if (action.function < 0 ||
          action.function >= static_cast<int64_t>(numFunctions))
        return fail() << " runs function " << action.function << " of "
                      << numFunctions;
      if (action.microbatch < 0 || action.slot < 0)
        return fail() << ": a negative microbatch or slot";
      unsigned functionStage = schedule.functions[action.function].stage;
      if (functionStage != stage)
        return fail() << ": the function's kernels are on stage "
                      << functionStage
                      << " (an action runs a function of its own stage)";
      if (action.microbatch >= microbatchesOf[action.function])
        return fail() << ": its kernels read an input pooled by microbatch, "
                      << "which holds " << microbatchesOf[action.function]
                      << " microbatches";
      actions.push_back(action);
    }
    // Pool p's slot (action slot mod its slots) goes to another microbatch
    // only after its holder's last action on the pool. (Flat tables: a
    // pipeline has thousands of actions per stage.)
    int64_t microbatches = 0;
    for (const ActionSchedule::Action &action : actions)
      microbatches = std::max(microbatches, action.microbatch + 1);
    size_t numPools = schedule.poolSlots.size();
    std::vector<int64_t> slotBase(numPools + 1, 0);
    for (size_t pool = 0; pool < numPools; ++pool)
      slotBase[pool + 1] = slotBase[pool] + schedule.poolSlots[pool];
    std::vector<int64_t> lastAction(numPools * microbatches, -1);
    for (auto [a, action] : llvm::enumerate(actions))
      for (int64_t pool : poolsOf[action.function])
        lastAction[pool * microbatches + action.microbatch] = a;
    // Per pool slot, the microbatch holding it (-1: none yet).
    std::vector<int64_t> holder(slotBase[numPools], -1);
    for (auto [a, action] : llvm::enumerate(actions))
      for (int64_t pool : poolsOf[action.function]) {
        int64_t slot = action.slot % schedule.poolSlots[pool];
        int64_t &held = holder[slotBase[pool] + slot];
        if (held >= 0 && held != action.microbatch) {
          int64_t until = lastAction[pool * microbatches + held];
          if (until > static_cast<int64_t>(a))
            return program.emitError("rt-plan-memory: stage ")
                   << stage << ": action " << a << " ("
                   << functionText(schedule, action.function)
                   << ", microbatch " << action.microbatch << ", slot "
                   << action.slot << "): slot " << slot << " of pool " << pool
                   << " still holds microbatch " << held
                   << ", whose last action on it is action " << until
                   << " (a slot is reused only after its microbatch's last "
                      "action)";
        }
        held = action.microbatch;
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

namespace {

/// A buffer as the action time sees it.
struct TimedBuffer {
  /// The bytes an instance counts (0 where `counts` declines it).
  int64_t bytes = 0;
  int64_t pool = -1;
  bool isAlloc = false;
  /// Bound by an rt.output or an rt.grad: its last interval runs to the end.
  bool isBound = false;
  /// Some run does not start a new interval of it (see Touch), or it is
  /// bound: its intervals depend on the other actions, so the actions
  /// touching it are replayed. Otherwise every run of a function touching
  /// it holds it from the function's first touch to its last, whatever ran
  /// before: it is part of the function's profile.
  bool crossesRuns = false;
  /// Where it crosses runs, its first instance (a pooled buffer has one per
  /// slot).
  int64_t firstInstance = -1;
};

/// The kernels of one function that touch one alloc: the first and the last
/// (relative to the function's first kernel), and whether the first writes
/// it without reading it. A run whose first touch is such a write starts a
/// new interval of the instance; any other touch continues the current one.
struct Touch {
  unsigned buffer = 0;
  int64_t first = 0;
  int64_t last = 0;
  bool writesFirst = false;
};

/// A touch of a buffer crossing runs, as each run of the function replays
/// it: the segments of the function (see Profile) starting at the first
/// touch and after the last.
struct Crossing {
  int64_t bytes = 0;
  int64_t firstInstance = 0;
  /// A pooled buffer's slots (its instance is the action's slot modulo
  /// them), else 0.
  int64_t poolSlots = 0;
  bool isBound = false;
  bool writesFirst = false;
  unsigned startSegment = 0;
  unsigned endSegment = 0;
};

/// One function's kernels cut at the first touches and after the last
/// touches of its buffers that cross runs: within a segment only the
/// buffers private to runs change, the same way in every run.
struct Profile {
  /// Segment j of `numSegments` starts at kernel cuts[firstCut + j]; its
  /// most bytes of private buffers are segmentMax[firstCut + j].
  size_t firstCut = 0;
  size_t numSegments = 0;
  /// Its touches of buffers crossing runs, from `crossings`.
  size_t firstCrossing = 0;
  size_t numCrossings = 0;
};

/// The planned peaks of a program run by actions, per stage: each
/// function's private buffers summed up once, the buffers crossing runs
/// replayed at their touches.
class ActionPeaks {
public:
  ActionPeaks(ProgramOp program, const ActionSchedule &schedule,
              function_ref<bool(Value)> counts);
  int64_t stagePeak(unsigned stage);

private:
  ArrayRef<Crossing> crossingsOf(const Profile &profile) const {
    return ArrayRef(crossings).slice(profile.firstCrossing,
                                     profile.numCrossings);
  }

  const ActionSchedule &schedule;
  /// Params, state and inputs: per stage, the bytes of those it owns.
  SmallVector<int64_t> persistent;
  std::vector<Profile> profiles;
  std::vector<int64_t> cuts, segmentMax;
  std::vector<Crossing> crossings;
  int64_t numInstances = 0;
};

} // namespace

ActionPeaks::ActionPeaks(ProgramOp program, const ActionSchedule &schedule,
                         function_ref<bool(Value)> counts)
    : schedule(schedule) {
  Block &body = program.getBody().front();
  size_t numStages = schedule.stageActions.size();
  DenseMap<Value, unsigned> index;
  SmallVector<TimedBuffer> buffers;
  SmallVector<KernelOp> kernels;
  for (Operation &op : body) {
    if (auto kernel = dyn_cast<KernelOp>(op)) {
      kernels.push_back(kernel);
    } else if (Value bound = boundBuffer(op)) {
      buffers[index.lookup(bound)].isBound = true;
    } else if (isa<ParamOp, InputOp, StateOp, AllocOp>(op)) {
      Value buffer = op.getResult(0);
      index[buffer] = buffers.size();
      TimedBuffer &info = buffers.emplace_back();
      if (!counts || counts(buffer))
        info.bytes = getBufferBytes(cast<MemRefType>(buffer.getType()));
      if (auto input = dyn_cast<InputOp>(op))
        if (IntegerAttr microbatches = input.getMicrobatchesAttr())
          info.bytes *= microbatches.getInt();
      info.isAlloc = isa<AllocOp>(op);
      info.pool = poolOf(buffer);
    }
  }

  // Params, state and inputs persist, every slot from load to the end, on
  // the stages whose kernels use them (those no kernel uses: on stage 0).
  // Each function's touches of allocs in program order (a function's
  // kernels are contiguous, so are its touches); per buffer, its latest.
  BitVector persistsOn(buffers.size() * numStages);
  std::vector<Touch> touches;
  std::vector<std::pair<size_t, size_t>> touchRanges(schedule.functions.size());
  std::vector<int64_t> latestTouch(buffers.size(), -1);
  for (auto [k, kernel] : llvm::enumerate(kernels)) {
    int64_t f = schedule.functionOf[k];
    const ActionSchedule::Function &function = schedule.functions[f];
    if (static_cast<int64_t>(k) == function.first)
      touchRanges[f].first = touches.size();
    int64_t position = k - function.first;
    int64_t begin = touchRanges[f].first;
    // Operands before results: a kernel that reads and writes a buffer
    // continues its interval.
    auto touch = [&](Value value, bool write) {
      unsigned b = index.lookup(value);
      const TimedBuffer &info = buffers[b];
      if (!info.isAlloc) {
        persistsOn.set(b * numStages + function.stage);
        return;
      }
      // (What counts no bytes changes no peak.)
      if (info.bytes == 0)
        return;
      if (latestTouch[b] < begin) {
        latestTouch[b] = touches.size();
        touches.push_back({b, position, position, write});
      }
      touches[latestTouch[b]].last = position;
    };
    for (Value buffer : kernel.getInputs())
      touch(buffer, false);
    for (Value buffer : kernel.getOutputs())
      touch(buffer, true);
    touchRanges[f].second = touches.size();
  }
  persistent.assign(numStages, 0);
  for (auto [b, info] : llvm::enumerate(buffers)) {
    if (info.isAlloc)
      continue;
    bool used = false;
    for (size_t stage = 0; stage < numStages; ++stage)
      if (persistsOn.test(b * numStages + stage)) {
        persistent[stage] += info.bytes;
        used = true;
      }
    if (!used)
      persistent[0] += info.bytes;
  }
  for (const Touch &touch : touches)
    if (!touch.writesFirst)
      buffers[touch.buffer].crossesRuns = true;
  for (TimedBuffer &info : buffers) {
    info.crossesRuns |= info.isAlloc && info.isBound;
    if (!info.crossesRuns)
      continue;
    info.firstInstance = numInstances;
    numInstances += info.pool >= 0 ? schedule.poolSlots[info.pool] : 1;
  }

  // Each function's profile: the bytes of its private buffers live at each
  // of its kernels, their most over each segment.
  profiles.resize(schedule.functions.size());
  std::vector<int64_t> change;
  for (auto [f, function] : llvm::enumerate(schedule.functions)) {
    Profile &profile = profiles[f];
    profile.firstCut = cuts.size();
    profile.firstCrossing = crossings.size();
    change.assign(function.count + 1, 0);
    cuts.push_back(0);
    cuts.push_back(function.count);
    auto [begin, end] = touchRanges[f];
    ArrayRef<Touch> functionTouches =
        ArrayRef(touches).slice(begin, end - begin);
    for (const Touch &touch : functionTouches) {
      const TimedBuffer &info = buffers[touch.buffer];
      if (info.crossesRuns) {
        cuts.push_back(touch.first);
        cuts.push_back(touch.last + 1);
        continue;
      }
      change[touch.first] += info.bytes;
      change[touch.last + 1] -= info.bytes;
    }
    auto firstCut = cuts.begin() + profile.firstCut;
    std::sort(firstCut, cuts.end());
    cuts.erase(std::unique(firstCut, cuts.end()), cuts.end());
    ArrayRef<int64_t> functionCuts =
        ArrayRef(cuts).drop_front(profile.firstCut);
    profile.numSegments = functionCuts.size() - 1;
    int64_t bytes = 0;
    for (size_t j = 0; j < profile.numSegments; ++j) {
      int64_t most = 0;
      for (int64_t p = functionCuts[j]; p < functionCuts[j + 1]; ++p) {
        bytes += change[p];
        most = std::max(most, bytes);
      }
      segmentMax.push_back(most);
    }
    // segmentMax keeps step with cuts (the function's last cut ends it).
    segmentMax.push_back(0);
    auto segmentAt = [&](int64_t position) -> unsigned {
      return llvm::lower_bound(functionCuts, position) - functionCuts.begin();
    };
    for (const Touch &touch : functionTouches) {
      const TimedBuffer &info = buffers[touch.buffer];
      if (info.crossesRuns)
        crossings.push_back({info.bytes, info.firstInstance,
                             info.pool >= 0 ? schedule.poolSlots[info.pool]
                                            : 0,
                             info.isBound, touch.writesFirst,
                             segmentAt(touch.first),
                             segmentAt(touch.last + 1)});
    }
    profile.numCrossings = crossings.size() - profile.firstCrossing;
  }
}

int64_t ActionPeaks::stagePeak(unsigned stage) {
  // Time is the stage's actions' segments in order; each action has a slot
  // in `delta` per segment and one for its end. The instances of buffers
  // crossing runs follow the runtime's rule at their touches alone: `delta`
  // is the change in their live bytes at each slot.
  const auto &actions = schedule.stageActions[stage];
  size_t numSlots = 0;
  for (const ActionSchedule::Action &action : actions)
    numSlots += profiles[action.function].numSegments + 1;
  std::vector<int64_t> delta(numSlots, 0);
  // Per instance, the slot after its open interval's last touch, or -1.
  std::vector<int64_t> endOf(numInstances, -1);
  std::vector<std::pair<int64_t, const Crossing *>> opened;
  int64_t base = 0;
  for (const ActionSchedule::Action &action : actions) {
    const Profile &profile = profiles[action.function];
    for (const Crossing &crossing : crossingsOf(profile)) {
      int64_t instance =
          crossing.firstInstance +
          (crossing.poolSlots ? action.slot % crossing.poolSlots : 0);
      int64_t &end = endOf[instance];
      if (end >= 0 && crossing.writesFirst) {
        delta[end] -= crossing.bytes;
        end = -1;
      }
      if (end < 0) {
        delta[base + crossing.startSegment] += crossing.bytes;
        opened.push_back({instance, &crossing});
      }
      end = base + crossing.endSegment;
    }
    base += profile.numSegments + 1;
  }
  // The last intervals end after their last touch; an output's or a
  // gradient's at the end of the step.
  for (auto [instance, crossing] : opened) {
    int64_t &end = endOf[instance];
    if (end >= 0 && !crossing->isBound)
      delta[end] -= crossing->bytes;
    end = -1;
  }
  int64_t bytes = 0, peak = 0;
  size_t slot = 0;
  for (const ActionSchedule::Action &action : actions) {
    const Profile &profile = profiles[action.function];
    for (size_t j = 0; j < profile.numSegments; ++j) {
      bytes += delta[slot++];
      peak = std::max(peak, bytes + segmentMax[profile.firstCut + j]);
    }
    bytes += delta[slot++];
  }
  // At the end only outputs and gradients are live.
  peak = std::max(peak, bytes);
  return persistent[stage] + peak;
}

SmallVector<int64_t>
mlir::rt::computeActionPeaks(ProgramOp program, const ActionSchedule &schedule,
                             function_ref<bool(Value)> counts) {
  ActionPeaks peaks(program, schedule, counts);
  SmallVector<int64_t> result;
  for (unsigned stage = 0; stage < schedule.stageActions.size(); ++stage)
    result.push_back(peaks.stagePeak(stage));
  return result;
}

int64_t mlir::rt::computeActionPeak(ProgramOp program,
                                    const ActionSchedule &schedule,
                                    unsigned stage,
                                    function_ref<bool(Value)> counts) {
  return ActionPeaks(program, schedule, counts).stagePeak(stage);
}
