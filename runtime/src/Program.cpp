//===- Program.cpp - an executable decoded into kernel calls --------------===//
//
// decodeProgram reads the buffers, params and bindings of an executable and
// decodes its kernels (ProgramChecks.h: per kernel, then across kernels); the
// rest is the program level: the mesh, splits and global shapes, a rank's
// placement, and the kernels computing a buffer.
//
// Layering: the decoder lies below the loader. Executable.cpp's
// checkExecutable runs decodeProgram as its last gate; this side includes
// nothing of Executable.h (dtype names come from ExecutableDType.h, opcode
// names from the kernel table).
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Program.h"
#include "ProgramChecks.h"
#include "tpcrt/Shape.h"

#include <algorithm>
#include <map>
#include <string>
#include <thread>

using namespace tpcrt;

Mesh tpcrt::meshOf(const fb::Executable &exe) {
  Mesh mesh;
  if (exe.mesh())
    for (const fb::MeshAxis *axis : *exe.mesh()) {
      mesh.names.push_back(axis->name() ? axis->name()->str() : "");
      mesh.sizes.push_back(axis->size());
    }
  return mesh;
}

int32_t tpcrt::stageAxisOf(const Mesh &mesh) {
  for (size_t a = 0; a < mesh.names.size(); ++a)
    if (mesh.names[a] == kStageAxisName)
      return static_cast<int32_t>(a);
  return -1;
}

namespace {

/// Makes `stage` the program's: its kernels in calls (copies of `all`'s,
/// the file's kernels; without stages `all` is empty and calls is the file
/// already), its actions and its planned peak.
void selectStage(Program &program, uint32_t stage,
                 const std::vector<KernelCall> &all) {
  program.stage = stage;
  if (!program.stagePlannedPeakBytes.empty())
    program.plannedPeakBytes = program.stagePlannedPeakBytes[stage];
  if (!all.empty()) {
    program.calls.clear();
    for (const KernelCall &call : all)
      if (call.stage == stage)
        program.calls.push_back(call);
  }
  selectActions(program);
}

/// The lifetimes, the plan and the peak of the selected stage's kernels.
Status checkStage(Program &program) {
  Status s = computeLifetimes(program);
  if (s)
    s = checkPlanAndMeasurePeak(program);
  if (!s && program.numStages > 1)
    return s.withContext("stage " + std::to_string(program.stage));
  return s;
}

/// Program::bufferStages from the kernels of every stage.
void findBufferStages(Program &program) {
  std::vector<std::vector<uint32_t>> &stages = program.bufferStages;
  stages.assign(program.buffers.size(), {});
  auto add = [&](const TensorRef &t, uint32_t stage) {
    std::vector<uint32_t> &list = stages[t.buffer];
    if (std::find(list.begin(), list.end(), stage) == list.end())
      list.push_back(stage);
  };
  for (const KernelCall &call : program.fileCalls()) {
    for (const TensorRef &t : call.operands)
      add(t, call.stage);
    for (const TensorRef &t : call.results)
      add(t, call.stage);
  }
  for (std::vector<uint32_t> &list : stages) {
    if (list.empty())
      list.push_back(0);
    std::sort(list.begin(), list.end());
  }
}

} // namespace

void tpcrt::selectActions(Program &program) {
  program.actions.clear();
  uint64_t runs = 0;
  if (!program.hasActions()) {
    ActionRef all;
    all.end = static_cast<uint32_t>(program.calls.size());
    program.actions.push_back(all);
    program.numRuns = program.calls.size();
    return;
  }
  // A function's kernels are all of the stage: consecutive in calls, found
  // once per function.
  std::vector<uint32_t> beginOf(program.functions.size(), UINT32_MAX);
  const std::vector<ActionRef> &list = program.stageActions[program.stage];
  program.actions.reserve(list.size());
  for (ActionRef action : list) {
    const FunctionRef &function = program.functions[action.function];
    uint32_t &begin = beginOf[action.function];
    if (begin == UINT32_MAX)
      begin = static_cast<uint32_t>(
          std::lower_bound(program.calls.begin(), program.calls.end(),
                           function.firstKernel,
                           [](const KernelCall &call, uint32_t index) {
                             return call.index < index;
                           }) -
          program.calls.begin());
    action.begin = begin;
    action.end = action.begin + function.kernelCount;
    runs += function.kernelCount;
    program.actions.push_back(action);
  }
  program.numRuns = runs;
}

Splits tpcrt::splitsOf(
    const flatbuffers::Vector<flatbuffers::Offset<fb::DimSplit>> *list) {
  Splits splits;
  if (list)
    for (const fb::DimSplit *split : *list) {
      splits.emplace_back();
      if (split->axes())
        splits.back().assign(split->axes()->begin(), split->axes()->end());
    }
  return splits;
}

Status tpcrt::checkSplits(const Mesh &mesh, const Splits &splits, size_t rank) {
  if (splits.empty())
    return Status::ok();
  if (splits.size() != rank)
    return Status::error("splits name " + std::to_string(splits.size()) +
                         " dimensions, the tensor has " + std::to_string(rank));
  std::vector<uint32_t> used;
  for (size_t d = 0; d < splits.size(); ++d) {
    if (Status s = mesh.checkAxes(splits[d]); !s)
      return s.withContext("splits of dimension " + std::to_string(d));
    used.insert(used.end(), splits[d].begin(), splits[d].end());
  }
  if (Status s = mesh.checkAxes(used); !s)
    return s.withContext("splits");
  return Status::ok();
}

std::vector<int64_t> tpcrt::globalShape(const Mesh &mesh,
                                        const std::vector<int64_t> &shape,
                                        const Splits &splits) {
  std::vector<int64_t> global = shape;
  for (size_t d = 0; d < splits.size() && d < global.size(); ++d)
    global[d] *= mesh.groupSize(splits[d]);
  return global;
}

Status tpcrt::checkGlobalShape(const Mesh &mesh,
                               const std::vector<int64_t> &shape,
                               const Splits &splits, uint32_t microbatches) {
  std::vector<int64_t> global = shape;
  for (size_t d = 0; d < global.size(); ++d) {
    // A group has at most INT_MAX ranks (checkMesh): no overflow here.
    int64_t split = d < splits.size() ? mesh.groupSize(splits[d]) : 1;
    int64_t times = d == 0 ? split * microbatches : split;
    if (__builtin_mul_overflow(shape[d], times, &global[d])) {
      std::string by =
          split > 1 ? "the " + std::to_string(split) + " ranks splitting it"
                    : "";
      if (d == 0 && microbatches > 1)
        by += (by.empty() ? "the " : " and the ") +
              std::to_string(microbatches) + " microbatches";
      return Status::error("the global shape of " + formatShape(shape) +
                           " overflows: dimension " + std::to_string(d) + " (" +
                           std::to_string(shape[d]) + ") times " + by +
                           " exceeds 2^63 - 1");
    }
  }
  int64_t elements;
  if (!numElementsOf(global, elements))
    return Status::error("the global shape " + formatShape(global) + " of " +
                         formatShape(shape) +
                         " has more than 2^63 - 1 elements");
  return Status::ok();
}

Status tpcrt::decodeProgram(const fb::Executable &exe, Program &out) {
  Program program;
  program.mesh = meshOf(exe);
  program.coordinates.assign(program.mesh.sizes.size(), 0);
  program.stageAxis = stageAxisOf(program.mesh);
  if (program.stageAxis >= 0)
    program.numStages = program.mesh.sizes[program.stageAxis];
  program.arenaBytes = exe.arena_bytes();
  program.seed = exe.seed();
  if (exe.hf_config())
    program.hfConfig = exe.hf_config()->str();
  program.plannedPeakBytes = exe.planned_peak_bytes();
  if (exe.stage_planned_peak_bytes())
    program.stagePlannedPeakBytes.assign(
        exe.stage_planned_peak_bytes()->begin(),
        exe.stage_planned_peak_bytes()->end());
  uint32_t numBuffers = exe.buffers() ? exe.buffers()->size() : 0;
  uint32_t numPools = exe.pools() ? exe.pools()->size() : 0;
  program.buffers.reserve(numBuffers);
  program.instanceBase.reserve(numBuffers);
  uint64_t instances = 0;
  for (uint32_t b = 0; b < numBuffers; ++b) {
    const fb::Buffer *buffer = exe.buffers()->Get(b);
    TensorRef t;
    t.buffer = b;
    t.offset = buffer->offset();
    t.bytes = buffer->size();
    t.dtype = buffer->dtype();
    if (buffer->shape())
      t.shape.assign(buffer->shape()->begin(), buffer->shape()->end());
    if (!numElementsOf(t.shape, t.elements))
      return Status::error("buffer " + std::to_string(b) +
                           ": shape has too many elements");
    uint32_t slots = 1;
    if (buffer->pool() >= 0) {
      if (static_cast<uint32_t>(buffer->pool()) >= numPools)
        return Status::error("buffer " + std::to_string(b) + ": pool " +
                             std::to_string(buffer->pool()) +
                             " but the executable has " +
                             std::to_string(numPools) + " pools");
      const fb::Pool *pool = exe.pools()->Get(buffer->pool());
      t.pool = buffer->pool();
      t.poolStride = pool->stride();
      t.poolSlots = pool->slots();
      t.byMicrobatch = pool->by_microbatch();
      slots = pool->slots();
    }
    program.instanceBase.push_back(static_cast<uint32_t>(instances));
    instances += slots;
    // Each slot has a lifetime: bound the loader's work on a hostile file.
    if (instances > kMaxBufferInstances)
      return Status::error(
          "buffer " + std::to_string(b) + ": the buffers' pool slots number " +
          std::to_string(instances) + " so far, more than " +
          std::to_string(kMaxBufferInstances));
    program.buffers.push_back(std::move(t));
  }
  program.numInstances = static_cast<uint32_t>(instances);
  if (Status s = readActions(exe, program); !s)
    return s;

  if (exe.params())
    for (const fb::Param *param : *exe.params()) {
      ParamRef ref;
      ref.hfName = param->hf_name()->str();
      if (param->hf_shape())
        ref.hfShape.assign(param->hf_shape()->begin(),
                           param->hf_shape()->end());
      if (param->view_shape())
        ref.viewShape.assign(param->view_shape()->begin(),
                             param->view_shape()->end());
      ref.buffer = param->buffer();
      ref.init = param->init();
      ref.initStd = param->init_std();
      if (param->padded_shape() && param->padded_shape()->size())
        ref.paddedShape.assign(param->padded_shape()->begin(),
                               param->padded_shape()->end());
      else
        ref.paddedShape = ref.viewShape;
      ref.splits = splitsOf(param->splits());
      program.params.push_back(std::move(ref));
    }
  auto bindings =
      [](const flatbuffers::Vector<flatbuffers::Offset<fb::Binding>> *list,
         std::vector<BindingRef> &out) {
        if (list)
          for (const fb::Binding *binding : *list)
            out.push_back({binding->name()->str(), binding->buffer(),
                           binding->value_bound(),
                           splitsOf(binding->splits())});
      };
  bindings(exe.inputs(), program.inputs);
  bindings(exe.outputs(), program.outputs);
  bindings(exe.grads(), program.grads);
  if (exe.state())
    for (const fb::State *state : *exe.state())
      program.state.push_back(
          {state->name()->str(), state->param(), state->buffer()});

  uint32_t numKernels = exe.kernels() ? exe.kernels()->size() : 0;
  program.numKernels = numKernels;
  // With stages every kernel goes to allCalls, and calls gets a stage's.
  std::vector<KernelCall> &decoded =
      program.numStages > 1 ? program.allCalls : program.calls;
  decoded.reserve(numKernels);
  for (uint32_t i = 0; i < numKernels; ++i) {
    const fb::Kernel *kernel = exe.kernels()->Get(i);
    KernelCall call;
    call.index = i;
    call.stage = kernel->stage();
    call.op = kernel->op();
    if (kernel->operands())
      for (uint32_t id : *kernel->operands())
        call.operands.push_back(program.buffers[id]);
    if (kernel->results())
      for (uint32_t id : *kernel->results())
        call.results.push_back(program.buffers[id]);
    if (kernel->int_attrs())
      call.intAttrs.assign(kernel->int_attrs()->begin(),
                           kernel->int_attrs()->end());
    if (kernel->float_attrs())
      call.floatAttrs.assign(kernel->float_attrs()->begin(),
                             kernel->float_attrs()->end());
    call.flags = kernel->flags();
    call.splits = splitsOf(kernel->splits());
    for (const std::vector<TensorRef> *list : {&call.operands, &call.results})
      for (const TensorRef &t : *list)
        call.pooled = call.pooled || t.pool >= 0;
    std::vector<uint32_t> axes;
    Status s = decodeKernel(call, program.mesh, &axes);
    // A pooled kernel's aliasing depends on its runs' slots (Lifetimes.cpp).
    if (s && !call.pooled)
      s = checkAliasing(call);
    if (!s)
      return s.withContext(kernelText(call));
    if (!axes.empty()) {
      auto &groups = program.groups;
      auto it = std::find(groups.begin(), groups.end(), axes);
      call.group = static_cast<int32_t>(it - groups.begin());
      if (it == groups.end())
        groups.push_back(axes);
    }
    decoded.push_back(std::move(call));
  }
  if (Status s = checkTransfers(program); !s)
    return s;
  findBufferStages(program);
  // Each stage is a program of its own (one without kernels owns nothing
  // but what no kernel touches, stage 0's); stage 0's is kept. The upper
  // half of the stages is checked on a second thread, on a copy of the
  // program (the file's decoded kernels shared, read only), while this one
  // checks the lower half, stage 0 last: a pipeline's checks cost about as
  // much per stage, and a long action list makes them the loader's (and
  // the compile's) largest part. The highest stage that fails is reported,
  // as checking them in turn from the last would.
  std::vector<uint32_t> stages = {0};
  for (const KernelCall &call : program.allCalls)
    stages.push_back(call.stage);
  std::sort(stages.begin(), stages.end());
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
  std::vector<KernelCall> all = std::move(program.allCalls);
  program.allCalls.clear();
  // Checks stages[from, to) from the last, on `view`.
  auto checkStages = [&](Program &view, size_t from, size_t to) {
    for (size_t i = to; i-- > from;) {
      selectStage(view, stages[i], all);
      if (Status s = checkStage(view); !s)
        return s;
    }
    return Status::ok();
  };
  size_t half = (stages.size() + 1) / 2;
  Status upper = Status::ok();
  std::thread worker;
  Program view;
  if (half < stages.size()) {
    view = program;
    worker = std::thread(
        [&] { upper = checkStages(view, half, stages.size()); });
  }
  Status lower = checkStages(program, 0, half);
  if (worker.joinable())
    worker.join();
  program.allCalls = std::move(all);
  if (!upper)
    return upper;
  if (!lower)
    return lower;
  out = std::move(program);
  return Status::ok();
}

namespace {
const BindingRef *findBinding(const std::vector<BindingRef> &list,
                              const std::string &name) {
  for (const BindingRef &binding : list)
    if (binding.name == name)
      return &binding;
  return nullptr;
}
} // namespace

bool Program::ownsBuffer(uint32_t buffer) const {
  if (buffer >= bufferStages.size())
    return false;
  const std::vector<uint32_t> &stages = bufferStages[buffer];
  return std::find(stages.begin(), stages.end(), stage) != stages.end();
}

const BindingRef *Program::findInput(const std::string &name) const {
  return findBinding(inputs, name);
}

const BindingRef *Program::findOutput(const std::string &name) const {
  return findBinding(outputs, name);
}

std::vector<int64_t> Program::microbatchShapeOf(const BindingRef &input) const {
  return globalShape(mesh, buffers[input.buffer].shape, input.splits);
}

uint32_t Program::microbatchesOf(const BindingRef &input) const {
  const TensorRef &t = buffers[input.buffer];
  return t.pool >= 0 && t.byMicrobatch ? pools[t.pool].slots : 1;
}

std::vector<int64_t> Program::globalShapeOf(const BindingRef &input) const {
  std::vector<int64_t> shape = microbatchShapeOf(input);
  if (!shape.empty())
    shape[0] *= microbatchesOf(input);
  return shape;
}

Status tpcrt::placeProgram(Program &program, int64_t rank) {
  int64_t worldSize = program.mesh.worldSize();
  if (rank < 0 || rank >= worldSize)
    return Status::error("rank " + std::to_string(rank) + " is outside [0, " +
                         std::to_string(worldSize) + ")");
  program.rank = rank;
  program.coordinates = program.mesh.coordinates(rank);
  if (program.stageAxis >= 0) {
    auto stage = static_cast<uint32_t>(program.coordinates[program.stageAxis]);
    bool reselect = !program.allCalls.empty() && stage != program.stage;
    selectStage(program, stage, program.allCalls);
    // Checked at decode: this recomputes the stage's lifetimes and peak.
    if (reselect)
      if (Status s = checkStage(program); !s)
        return s;
  }
  for (KernelCall &call : program.calls) {
    if (!call.splits.empty()) {
      Block block;
      if (Status s = blockOf(program.mesh, program.coordinates,
                             call.globalShape, call.splits, block);
          !s)
        return s.withContext(kernelText(call));
      call.globalOffset = block.offset;
    }
    if (call.group >= 0)
      call.groupPosition = program.mesh.positionIn(program.coordinates,
                                                   program.groups[call.group]);
    bool transfer = call.op == fb::OpCode::Send ||
                    call.op == fb::OpCode::Recv ||
                    call.op == fb::OpCode::SendStart ||
                    call.op == fb::OpCode::RecvStart;
    if (transfer && call.intAttrs[0] == call.groupPosition)
      return Status::error(kernelText(call) + ": peer " +
                           std::to_string(call.intAttrs[0]) +
                           " is this rank's own position in its group");
  }
  return Status::ok();
}

std::vector<std::pair<uint32_t, uint32_t>>
Program::stageRuns(uint32_t stage) const {
  std::vector<std::pair<uint32_t, uint32_t>> runs;
  if (!hasActions()) {
    for (const KernelCall &call : fileCalls())
      if (call.stage == stage)
        runs.emplace_back(call.index, 0);
    return runs;
  }
  if (stage >= stageActions.size())
    return runs;
  const std::vector<ActionRef> &list = stageActions[stage];
  for (uint32_t a = 0; a < list.size(); ++a) {
    const FunctionRef &f = functions[list[a].function];
    for (uint32_t k = f.firstKernel; k < f.firstKernel + f.kernelCount; ++k)
      runs.emplace_back(k, a);
  }
  return runs;
}

ActionRef Program::stageAction(uint32_t stage, uint32_t action) const {
  if (!hasActions())
    return ActionRef();
  return stageActions[stage][action];
}

std::pair<const Program::RunMeet *, const Program::RunMeet *>
Program::meetsOf(uint32_t stage, uint64_t run) const {
  auto range = std::equal_range(
      runMeets.begin(), runMeets.end(), RunMeet{stage, run, 0, 0},
      [](const RunMeet &x, const RunMeet &y) {
        return std::make_pair(x.stage, x.run) < std::make_pair(y.stage, y.run);
      });
  return {runMeets.data() + (range.first - runMeets.begin()),
          runMeets.data() + (range.second - runMeets.begin())};
}

std::vector<KernelRun> Program::runsComputing(uint32_t buffer) const {
  // Per stage, backwards from the end of its step: a run is needed when it
  // writes an instance (a buffer, or a pooled buffer's slot) a later needed
  // run reads (or the target, in every slot); its results are then
  // produced, its operands needed from earlier runs. An in-place result is
  // also an operand, so it stays needed. Buffers are per stage (each has
  // its arena). A needed run that meets others (a recv its send, a started
  // transfer its wait and the other way round) makes them needed too:
  // passes repeat until no new one is.
  const std::vector<KernelCall> &all = fileCalls();
  std::vector<uint32_t> stages;
  for (const KernelCall &call : all)
    if (std::find(stages.begin(), stages.end(), call.stage) == stages.end())
      stages.push_back(call.stage);
  std::map<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>> runs;
  std::map<uint32_t, std::vector<bool>> chosen, forced;
  for (uint32_t stage : stages) {
    runs[stage] = stageRuns(stage);
    chosen[stage].assign(runs[stage].size(), false);
    forced[stage].assign(runs[stage].size(), false);
  }
  // A pipeline's calls are indexed by file index in allCalls.
  auto callOf = [&](uint32_t kernel) -> const KernelCall & {
    return all[kernel];
  };
  auto slotsOf = [&](const TensorRef &t) {
    return t.pool < 0 ? 1u : pools[t.pool].slots;
  };
  std::vector<bool> needed(numInstances);
  for (bool again = true; again;) {
    again = false;
    for (uint32_t stage : stages) {
      std::fill(needed.begin(), needed.end(), false);
      if (buffer < buffers.size())
        for (uint32_t s = 0; s < slotsOf(buffers[buffer]); ++s)
          needed[instanceBase[buffer] + s] = true;
      const std::vector<std::pair<uint32_t, uint32_t>> &list = runs[stage];
      for (size_t r = list.size(); r-- > 0;) {
        const KernelCall &call = callOf(list[r].first);
        ActionRef action = stageAction(stage, list[r].second);
        auto instance = [&](const TensorRef &t) {
          return instanceBase[t.buffer] +
                 t.slotOf(action.microbatch, action.slot);
        };
        bool writes = forced[stage][r];
        for (const TensorRef &result : call.results)
          writes = writes || needed[instance(result)];
        if (!writes)
          continue;
        chosen[stage][r] = true;
        for (const TensorRef &result : call.results)
          needed[instance(result)] = false;
        for (const TensorRef &operand : call.operands)
          needed[instance(operand)] = true;
        auto [first, last] = meetsOf(stage, r);
        for (const RunMeet *meet = first; meet != last; ++meet) {
          auto it = forced.find(meet->otherStage);
          uint64_t run = meet->otherRun;
          if (it != forced.end() && run < it->second.size() &&
              !it->second[run]) {
            it->second[run] = true;
            again = true;
          }
        }
      }
    }
  }
  std::vector<KernelRun> result;
  auto mine = runs.find(stage);
  if (mine == runs.end())
    return result;
  // This stage's runs are its actions over calls, in order.
  uint64_t r = 0;
  for (uint32_t a = 0; a < actions.size(); ++a)
    for (uint32_t p = actions[a].begin; p < actions[a].end; ++p, ++r)
      if (r < chosen[stage].size() && chosen[stage][r])
        result.push_back({p, a});
  return result;
}

std::vector<uint32_t> Program::kernelsComputing(uint32_t buffer) const {
  std::vector<uint32_t> positions;
  for (const KernelRun &run : runsComputing(buffer))
    positions.push_back(run.call);
  return positions;
}

bool tpcrt::isRuntimeInput(const std::string &name) { return name == "step"; }

