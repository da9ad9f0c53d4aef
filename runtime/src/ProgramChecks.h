//===- ProgramChecks.h - the checks decodeProgram runs ----------*- C++ -*-===//
//
// Private to the runtime. decodeProgram (Program.cpp) reads the functions,
// pools and actions (Actions.cpp), runs, on each kernel, the decoder and the
// aliasing check (KernelDecoder.cpp), then, across the kernels (or the runs
// of the action lists), the transfers (Stages.cpp), the lifetimes, the
// plan's offsets and the peak (Lifetimes.cpp).
// Like Program.cpp, they lie below the loader and include nothing of
// Executable.h.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_SRC_PROGRAMCHECKS_H
#define TPCRT_SRC_PROGRAMCHECKS_H

#include "tpcrt/KernelTable.h"
#include "tpcrt/Program.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tpcrt {

/// One kernel: checks its attributes, dtypes and shapes, and fills in the
/// sizes of its KernelCall.
class KernelDecoder {
public:
  KernelDecoder(KernelCall &call, const Mesh &mesh)
      : call(call), mesh(mesh) {}

  Status decode();
  /// The splits of a dropout kernel's first result (after decode()).
  Status dropoutSplits();
  /// KernelCall::streamElements (after dropoutSplits()).
  void streamElements();

private:
  const TensorRef &in(size_t j) const { return call.operands[j]; }
  const TensorRef &out(size_t j) const { return call.results[j]; }
  std::string inRole(size_t j) const { return operandRole(call.op, j); }
  std::string outRole(size_t j) const { return resultRole(call.op, j); }
  /// The flag bits the opcode's Kernels.def row defines.
  uint32_t rowFlagMask() const { return kernelInfo(call.op)->flagMask; }

  Status attrs(size_t ints, size_t floats, uint32_t flagMask);
  Status floatDType(const TensorRef &t, const std::string &role);
  Status floatOperands();
  Status dtype(const TensorRef &t, const std::string &role, fb::DType expected);
  Status rankAtLeast(const TensorRef &t, const std::string &role, size_t rank);
  Status rankAtMost(const TensorRef &t, const std::string &role, size_t rank);
  Status shape(const TensorRef &t, const std::string &role,
               const std::vector<int64_t> &expected);
  Status product(const TensorRef &t, const std::string &role, size_t begin,
                 size_t end, int64_t &value);
  Status finite(size_t index, const char *name, double lowest,
                bool lowestIncluded);
  Status dropoutRate(size_t index);
  Status streamAttrs(size_t floats, uint32_t flagMask);

  Status scalar(const TensorRef &t, const std::string &role, fb::DType dt);
  Status linearSizes(const TensorRef &x, const std::string &xRole,
                     const TensorRef &w, const std::string &wRole,
                     const TensorRef &y, const std::string &yRole);
  Status softmaxSizes(const TensorRef &x, const std::string &role);
  Status attentionAttrs();
  Status attentionSizes(size_t first);
  Status attentionQkvSizes(size_t index);
  /// attention_lse's and attention_qkv_lse's lse (result 1), f32 [b, heads,
  /// s_q].
  Status attentionLseResult();
  /// A backward's output and lse (operands `first`, `first` + 1), where given:
  /// the forward's result's shape (dO's) and an lse's.
  Status attentionSavedOperands(size_t first);
  /// An attention tensor's shape in the call's layout (batch from the call).
  std::vector<int64_t> attentionShape(int64_t heads, int64_t seq,
                                      int64_t dim) const;
  Status normSizes(const TensorRef &x, const std::string &role);
  /// A norm gradient's epsilon, float operands, input sizes and dY (its
  /// operand 0, the input's shape).
  Status normGradOperands();
  Status crossEntropySizes();
  Status vocabRows(const TensorRef &table, const std::string &role);
  Status dimAttr(const TensorRef &t, const std::string &role, int64_t &dim);

  Status embeddingSizes(const TensorRef &table, const std::string &tableRole,
                        const TensorRef &rows, const std::string &rowsRole);
  Status embedding();
  Status linear();
  Status batchMatmul();
  Status norm();
  Status elementwise();
  Status broadcast();
  Status suffixCounts(const TensorRef &whole, const char *wholeRole,
                      const TensorRef &part, const char *partRole);
  Status softmax();
  Status attention();
  Status attentionQkv();
  Status attentionLse();
  Status attentionQkvLse();
  Status attentionQkvGrad();
  Status rotary();
  Status rotaryScaled();
  /// rotary's and rotary_scaled's checks and sizes (`floats` float_attrs).
  Status rotaryShape(size_t floats);
  Status crossEntropy();
  Status lossMean();
  Status copy();
  Status transpose();
  Status sliceOrRepeat();
  Status cast();

  Status embeddingGrad();
  Status linearGrad();
  Status sumTo();
  Status normInputGrad();
  Status normParamGrad();
  Status elementwiseGrad();
  Status dropoutMask();
  Status applyMask();
  Status softmaxGrad();
  Status attentionGrad();
  Status crossEntropyGrad();
  Status pad();
  Status concat();
  Status sumGroups();
  Status countTargets();
  Status zeros();
  Status inverseCount();
  Status optimizerUpdate();
  Status sumSquares();
  Status clipCoefficient();
  Status lrSchedule();

  Status groupAxes(size_t first);
  Status collectiveDType();
  Status allReduce();
  Status alongDim();
  Status allToAll();
  Status transfer();
  Status transferWait();

  KernelCall &call;
  const Mesh &mesh;
  /// A collective's mesh axes (the tail of its int_attrs).
  std::vector<uint32_t> axes;

  friend Status tpcrt::decodeKernel(KernelCall &, const Mesh &,
                                    std::vector<uint32_t> *);
};

/// The results of `call` against its operands and each other: no overlap
/// but an in-place kernel's same bytes and an update's own operands. Pooled
/// buffers at the slots of a run with `microbatch` and `slot`.
Status checkAliasing(const KernelCall &call, uint32_t microbatch = 0,
                     uint32_t slot = 0);

/// Reads Executable.functions, pools and stage_actions into the program
/// (the buffers read, their pools checked): pools of at least one slot and a
/// stride that is a multiple of 64; none of them without stage_actions;
/// with them one action list per stage, functions of at least one kernel,
/// disjoint, covering every kernel, each of one stage; actions running a
/// function of their stage with microbatches its by_microbatch pools hold
/// (any other pool is addressed at the action's slot mod its slots), no
/// microbatch taking a slot before the previous holder's last action on it.
Status readActions(const fb::Executable &exe, Program &program);

/// Sets program.actions (its stage's, with their positions in calls, or the
/// one action running every call) and program.numRuns from the selected
/// stage's calls.
void selectActions(Program &program);

/// Calls fn(stage, run, kernel, action) for every kernel run of every
/// stage's step (per stage in order; `run` counts from 0 per stage, `kernel`
/// is the file index, `action` indexes the stage's action list, 0 without
/// actions).
template <typename Fn> void forEachRun(const Program &program, Fn fn);

/// For messages: "function 2 ('B chunk 0')", "action 5 (function 2 ('B
/// chunk 0'), microbatch 3, slot 1)".
std::string functionText(const Program &program, uint32_t function);
std::string actionText(const Program &program, size_t index,
                       const ActionRef &action);

/// On a pipeline: every transfer (send, recv) has the "pp" axis alone as its
/// group and another stage as its peer; only transfers and collectives have
/// a group spanning the stages; and the stages, each running its kernels in
/// file order, get through all their transfers and collectives over "pp"
/// with blocking rendezvous semantics: a send meets the peer's next recv
/// from its stage (same dtype and element count), a collective the other
/// stages' (same opcode, group and input). Fills KernelCall::meets. Without
/// a "pp" axis: any transfer is refused.
Status checkTransfers(Program &program);

/// Fills program.lifetimes, instanceLifetimes and instanceIntervals (an
/// instance live once per action writing it anew; a function's temporary
/// once for all its runs) from the runs of the step (the selected stage's
/// actions over its calls), checking that every read follows a write, who
/// may write params, state and inputs, a pooled kernel's aliasing at each
/// run's slots and that a run's dropout stream (first_index + microbatch *
/// N) fits int64. With actions in about the time of a run of each function
/// and of the boundary touches of each action (Lifetimes.cpp).
Status computeLifetimes(Program &program);

/// Checks the plan's offsets against the live intervals (no two live buffer
/// instances share arena bytes) and sets program.peakBytes; with actions,
/// at the cost of computeLifetimes.
Status checkPlanAndMeasurePeak(Program &program);

/// For messages: "kernel 3 (linear)", and a buffer's bytes "[64, +32)".
std::string kernelText(const KernelCall &call);
std::string rangeText(const TensorRef &t);

template <typename Fn> void forEachRun(const Program &program, Fn fn) {
  const std::vector<KernelCall> &all = program.fileCalls();
  if (!program.hasActions()) {
    std::map<uint32_t, uint64_t> runs;
    for (const KernelCall &call : all)
      fn(call.stage, runs[call.stage]++, call.index, uint32_t(0));
    return;
  }
  for (uint32_t stage = 0; stage < program.stageActions.size(); ++stage) {
    const std::vector<ActionRef> &actions = program.stageActions[stage];
    uint64_t run = 0;
    for (uint32_t a = 0; a < actions.size(); ++a) {
      const FunctionRef &f = program.functions[actions[a].function];
      for (uint32_t k = f.firstKernel; k < f.firstKernel + f.kernelCount; ++k)
        fn(stage, run++, k, a);
    }
  }
}

} // namespace tpcrt

#endif // TPCRT_SRC_PROGRAMCHECKS_H
