//===- PipelineCheck.cpp - tpcrt-pipeline-check: pipeline stages on MPI ---===//
//
// `mpiexec -n 2|4 tpcrt-pipeline-check` runs the training step of
// PipelineExecutables.h on its two stages, one Interpreter per rank, and on
// every rank its twin on one stage alongside; after each of three steps
// every output, and at the end every gradient, param and optimizer state,
// that the rank's stage owns must be the twin's bit for bit; so must the
// loss of evaluate(), the loss read on rank 0 (readOnRankZero) and every
// param gathered on rank 0 from the stages owning it (gatherParamBuffer).
//   - 2 ranks: mesh [pp=2], its stages' private buffers sharing arena bytes
//     and not, against the twin without mesh;
//   - 4 ranks: mesh [pp=2, dp=2] against the twin on [dp=2] (run by the two
//     ranks of each stage), and [pp=2] on each half of the world.
// Also: a step allocates nothing, and a rank cannot write a buffer its stage
// does not own. And the step of ActionExecutables.h on [pp=2] as functions
// and actions against its unrolled form on [pp=2] (on 4 ranks, on each half
// of the world), bit for bit; so too with started transfers (send_start,
// recv_start, wait) in the order blocking ones cannot run, both stages
// sending first, in whole messages and cut into 64-byte pieces, and with
// stage 1 taking the started activations by blocking recvs. Exit 0 when every rank passed, 1 otherwise, 77 (skipped)
// without MPI.
//
//===----------------------------------------------------------------------===//

#include "ActionExecutables.h"
#include "PipelineExecutables.h"
#include "RankChecker.h"
#include "tpcrt/Checkpoint.h"
#include "tpcrt/Comm.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Weights.h"

#include <cstdio>
#include <cstring>

using namespace tpcrt;
using namespace tpcrt::test;

/// Allocations through operator new so far (AllocationCounter.cpp).
long allocationCount();

namespace {

struct Checker : RankChecker {
  /// The same bytes; for floats, the first difference is printed.
  void same(const std::string &what, const std::vector<uint8_t> &got,
            const std::vector<uint8_t> &want) {
    ++checks;
    if (got == want)
      return;
    std::string detail = std::to_string(got.size()) + " bytes, expected " +
                         std::to_string(want.size());
    for (size_t i = 0; got.size() == want.size() && i + 4 <= got.size(); i += 4)
      if (std::memcmp(&got[i], &want[i], 4) != 0) {
        float g, w;
        std::memcpy(&g, &got[i], 4);
        std::memcpy(&w, &want[i], 4);
        char text[96];
        std::snprintf(text, sizeof(text), "float %zu is %.9g, expected %.9g",
                      i / 4, g, w);
        detail = text;
        break;
      }
    fail(what + ": differs from the twin's: " + detail);
  }
};

/// An executable and its interpreter on this rank.
struct Run {
  std::vector<uint8_t> payload;
  Interpreter interpreter;

  /// `pieceBytes`: the CPU device's transfer pieces (0: its default).
  Status create(const fb::ExecutableT &exe, Communicator *world,
                uint64_t pieceBytes = 0) {
    payload = pack(exe);
    const fb::Executable *root = fb::GetExecutable(payload.data());
    if (Status s = checkExecutable(*root); !s)
      return s;
    return Interpreter::create(*root, createCpuDevice(pieceBytes), interpreter,
                               world);
  }
  const Program &program() const { return interpreter.program(); }
  Status read(uint32_t buffer, std::vector<uint8_t> &bytes) {
    bytes.resize(program().buffers[buffer].bytes);
    return interpreter.readBuffer(buffer, bytes.data(), bytes.size());
  }
};

/// The buffer called `name` among `list` (bindings) of `program`.
uint32_t bufferOf(const std::vector<BindingRef> &list,
                  const std::string &name) {
  for (const BindingRef &binding : list)
    if (binding.name == name)
      return binding.buffer;
  return UINT32_MAX;
}

/// Each named buffer this rank's stage owns, against the twin's.
void compareOwned(Checker &check, const std::string &where, Run &pipe,
                  Run &twin, const std::vector<std::string> &names,
                  const std::vector<BindingRef> &pipeList,
                  const std::vector<BindingRef> &twinList, int &compared) {
  for (const std::string &name : names) {
    uint32_t mine = bufferOf(pipeList, name), theirs = bufferOf(twinList, name);
    if (mine == UINT32_MAX || theirs == UINT32_MAX) {
      check.fail(where + ": no binding " + name);
      continue;
    }
    if (!pipe.program().ownsBuffer(mine))
      continue;
    std::vector<uint8_t> got, want;
    if (check.ok(where + name, pipe.read(mine, got)) &&
        check.ok(where + name + " (twin)", twin.read(theirs, want))) {
      check.same(where + name, got, want);
      ++compared;
    }
  }
}

/// Params and their state, by param, as bindings named like a checkpoint's.
std::vector<BindingRef> paramsAndState(const Program &program) {
  std::vector<BindingRef> list;
  for (const ParamRef &param : program.params)
    list.push_back({param.hfName, param.buffer, 0, {}});
  for (const StateRef &state : program.state)
    list.push_back({program.params[state.param].hfName + "." + state.name,
                    state.buffer,
                    0,
                    {}});
  return list;
}

/// The pipeline of `options` on `world` against its twin on one stage
/// (the same dp), run on `twinWorld` (null without dp).
void checkPipeline(Communicator &world, const PipelineOptions &options,
                   Communicator *twinWorld, Checker &check) {
  std::string where =
      "pp=" + std::to_string(options.stages) +
      (options.dp > 1 ? ",dp=" + std::to_string(options.dp) : std::string()) +
      (options.shareArena ? " (shared arena)" : "") + ": ";
  PipelineOptions one = options;
  one.stages = 1;
  Run pipe, twin;
  if (!check.ok(where + "create",
                pipe.create(pipelineModel(options), &world)) ||
      !check.ok(where + "create the twin",
                twin.create(pipelineModel(one), twinWorld)))
    return;
  const Program &program = pipe.program();
  uint32_t stage = program.stage;
  if (stage != static_cast<uint32_t>(program.coordinates[0]))
    check.fail(where + "the stage is not the pp coordinate");

  HostInputs pipeInputs, twinInputs;
  if (!check.ok(where + "weights", initWeights(5, pipe.interpreter)) ||
      !check.ok(where + "twin weights", initWeights(5, twin.interpreter)) ||
      !check.ok(where + "inputs", syntheticInputs(9, program, pipeInputs)) ||
      !check.ok(where + "twin inputs",
                syntheticInputs(9, twin.program(), twinInputs)))
    return;
  int compared = 0;
  std::vector<std::string> outputs = {"loss", "grad_norm", "lr"};
  for (int step = 1; step <= 3; ++step) {
    std::string at = where + "step " + std::to_string(step) + ": ";
    if (!check.ok(at + "inputs", pipeInputs.copyTo(pipe.interpreter)) ||
        !check.ok(at + "twin inputs", twinInputs.copyTo(twin.interpreter)))
      return;
    long before = allocationCount();
    Status ran = pipe.interpreter.runStep();
    long allocations = allocationCount() - before;
    if (!check.ok(at + "run", ran))
      return;
    ++check.checks;
    if (step > 1 && allocations != 0)
      check.fail(at + "the step allocated " + std::to_string(allocations) +
                 " times");
    if (!check.ok(at + "twin run", twin.interpreter.runStep()))
      return;
    compareOwned(check, at, pipe, twin, outputs, program.outputs,
                 twin.program().outputs, compared);
  }
  std::vector<std::string> grads, params;
  for (const BindingRef &grad : program.grads)
    grads.push_back(grad.name);
  std::vector<BindingRef> mine = paramsAndState(program),
                          theirs = paramsAndState(twin.program());
  for (const BindingRef &p : mine)
    params.push_back(p.name);
  compareOwned(check, where + "after 3 steps: grad ", pipe, twin, grads,
               program.grads, twin.program().grads, compared);
  compareOwned(check, where + "after 3 steps: ", pipe, twin, params, mine,
               theirs, compared);

  // Every stage runs its share of the evaluation.
  if (check.ok(where + "evaluate", pipe.interpreter.evaluate()) &&
      check.ok(where + "twin evaluate", twin.interpreter.evaluate()))
    compareOwned(check, where + "evaluated ", pipe, twin, {"loss"},
                 program.outputs, twin.program().outputs, compared);
  // Stage 0 holds every param but w1.weight, stage 1 every one but
  // w0.weight, and outputs that are not the loss.
  if (compared < 9)
    check.fail(where + "only " + std::to_string(compared) +
               " values compared on this rank");

  // Rank 0 gets the loss from the last stage, and every param whole.
  uint32_t loss = program.findOutput("loss")->buffer;
  float got = -1.0f, want = -2.0f;
  if (check.ok(where + "loss on rank 0",
               readOnRankZero(pipe.interpreter, loss, &got, sizeof(got))) &&
      check.ok(where + "twin loss",
               readOnRankZero(twin.interpreter,
                              twin.program().findOutput("loss")->buffer, &want,
                              sizeof(want))) &&
      pipe.interpreter.rank() == 0) {
    check.same(where + "loss read on rank 0",
               std::vector<uint8_t>(reinterpret_cast<uint8_t *>(&got),
                                    reinterpret_cast<uint8_t *>(&got + 1)),
               std::vector<uint8_t>(reinterpret_cast<uint8_t *>(&want),
                                    reinterpret_cast<uint8_t *>(&want + 1)));
  }
  for (size_t i = 0; i < program.params.size(); ++i) {
    const ParamRef &param = program.params[i];
    std::vector<uint8_t> whole, twins;
    if (check.ok(
            where + "gather " + param.hfName,
            gatherParamBuffer(pipe.interpreter, param, param.buffer, whole)) &&
        check.ok(where + "twin gather " + param.hfName,
                 gatherParamBuffer(twin.interpreter, twin.program().params[i],
                                   twin.program().params[i].buffer, twins)) &&
        pipe.interpreter.rank() == 0)
      check.same(where + param.hfName + " gathered on rank 0", whole, twins);
  }

  // Another stage's buffer is out of reach.
  uint32_t foreign = stage == 0 ? loss : program.findInput("input_ids")->buffer;
  std::vector<uint8_t> bytes(program.buffers[foreign].bytes);
  Status s = pipe.interpreter.writeBuffer(foreign, bytes.data(), bytes.size());
  std::string expected = "buffer " + std::to_string(foreign) +
                         " belongs to pipeline stage " +
                         std::to_string(1 - stage) +
                         ", not to this rank's stage " + std::to_string(stage);
  ++check.checks;
  if (s.message() != expected)
    check.fail(where + "writing another stage's buffer: got '" + s.message() +
               "', expected '" + expected + "'");
}

/// The training step of ActionExecutables.h on two stages as functions and
/// actions (4 microbatches in 1F1B order, the activation sent from a pooled
/// buffer of stage 0 to a pooled buffer of stage 1, its gradient back)
/// against the same step unrolled on the two stages with blocking
/// transfers: every value the rank's stage owns the same bit for bit after
/// each of three steps, and the evaluated loss. With `started`, the actions
/// start their transfers and wait for them later, both stages sending
/// first (with `mixed`, stage 1 receives the activations by blocking
/// recvs); `pieceBytes` cuts the transfers (0: whole). With `wrap` each
/// action's slot is its microbatch, which the stash pools take mod 2.
void checkActionStages(Communicator &world, Checker &check,
                       bool started = false, uint64_t pieceBytes = 0,
                       bool mixed = false, bool wrap = false) {
  std::string where =
      std::string("actions, pp=2") +
      (started ? ", started transfers" : "") +
      (mixed ? " and blocking recvs" : "") +
      (wrap ? ", slots by microbatch" : "") +
      (pieceBytes ? " in " + std::to_string(pieceBytes) + "-byte pieces"
                  : std::string()) +
      ": ";
  ActionModelOptions options;
  options.stages = 2;
  options.microbatches = 4;
  ActionModelOptions unrolledOptions = options;
  unrolledOptions.actions = false;
  options.startedTransfers = started;
  options.blockingActivationRecv = mixed;
  options.slotsAreMicrobatches = wrap;
  Run actions, unrolled;
  if (!check.ok(where + "create",
                actions.create(actionModel(options), &world, pieceBytes)) ||
      !check.ok(where + "create the unrolled step",
                unrolled.create(actionModel(unrolledOptions), &world)))
    return;
  const Program &program = actions.program();
  if (!program.hasActions() || unrolled.program().hasActions())
    check.fail(where + "expected actions in one form only");
  HostInputs actionInputs, unrolledInputs;
  if (!check.ok(where + "weights", initWeights(5, actions.interpreter)) ||
      !check.ok(where + "unrolled weights",
                initWeights(5, unrolled.interpreter)) ||
      !check.ok(where + "inputs", syntheticInputs(9, program, actionInputs)) ||
      !check.ok(where + "unrolled inputs",
                syntheticInputs(9, unrolled.program(), unrolledInputs)))
    return;
  int compared = 0;
  std::vector<std::string> outputs = {"loss", "grad_norm", "lr"};
  for (int step = 1; step <= 3; ++step) {
    std::string at = where + "step " + std::to_string(step) + ": ";
    if (!check.ok(at + "inputs", actionInputs.copyTo(actions.interpreter)) ||
        !check.ok(at + "unrolled inputs",
                  unrolledInputs.copyTo(unrolled.interpreter)))
      return;
    long before = allocationCount();
    Status ran = actions.interpreter.runStep();
    long allocations = allocationCount() - before;
    if (!check.ok(at + "run", ran))
      return;
    ++check.checks;
    if (step > 1 && allocations != 0)
      check.fail(at + "the step allocated " + std::to_string(allocations) +
                 " times");
    if (!check.ok(at + "unrolled run", unrolled.interpreter.runStep()))
      return;
    compareOwned(check, at, actions, unrolled, outputs, program.outputs,
                 unrolled.program().outputs, compared);
  }
  std::vector<std::string> grads, params;
  for (const BindingRef &grad : program.grads)
    grads.push_back(grad.name);
  std::vector<BindingRef> mine = paramsAndState(program),
                          theirs = paramsAndState(unrolled.program());
  for (const BindingRef &p : mine)
    params.push_back(p.name);
  compareOwned(check, where + "after 3 steps: grad ", actions, unrolled, grads,
               program.grads, unrolled.program().grads, compared);
  compareOwned(check, where + "after 3 steps: ", actions, unrolled, params,
               mine, theirs, compared);
  if (check.ok(where + "evaluate", actions.interpreter.evaluate()) &&
      check.ok(where + "unrolled evaluate", unrolled.interpreter.evaluate()))
    compareOwned(check, where + "evaluated ", actions, unrolled, {"loss"},
                 program.outputs, unrolled.program().outputs, compared);
  // Each stage: 2 params, 2 states, 2 grads, grad_norm and lr 3 times;
  // stage 1 also the loss, 4 times.
  int expected = program.stage == 0 ? 12 : 16;
  if (compared != expected)
    check.fail(where + std::to_string(compared) +
               " values compared on this rank, expected " +
               std::to_string(expected));
}

int run(Communicator &world) {
  Checker check;
  check.rank = world.rank();
  int size = world.size();
  if (size != 2 && size != 4) {
    std::fprintf(stderr, "tpcrt-pipeline-check runs on 2 or 4 ranks, not %d\n",
                 size);
    return 1;
  }
  PipelineOptions options;
  if (size == 2) {
    for (bool share : {true, false}) {
      options.shareArena = share;
      checkPipeline(world, options, nullptr, check);
    }
    checkActionStages(world, check);
    checkActionStages(world, check, true);
    checkActionStages(world, check, true, 64);
    checkActionStages(world, check, true, 64, true);
    checkActionStages(world, check, true, 0, false, true);
  } else {
    // Ranks are pp-major: rank = stage * 2 + dp position. The twin on
    // [dp=2] runs on the two ranks of each stage.
    std::unique_ptr<Communicator> dpRanks, half;
    if (check.ok("split by stage",
                 world.split(world.rank() / 2, world.rank() % 2, dpRanks))) {
      options.dp = 2;
      checkPipeline(world, options, dpRanks.get(), check);
    }
    if (check.ok("split into halves",
                 world.split(world.rank() / 2, world.rank(), half))) {
      options.dp = 1;
      checkPipeline(*half, options, nullptr, check);
      checkActionStages(*half, check);
      checkActionStages(*half, check, true, 64);
    }
  }
  return finishOnEveryRank(world, check);
}

} // namespace

int main(int argc, char **) {
  return mpiCheckMain(argc != 1, "mpiexec -n 2|4 tpcrt-pipeline-check", run);
}
