//===- KernelUses.h - which kernels write and read each buffer --*- C++ -*-===//
//
// For passes that fold kernels together (rt-fold-pad-sums,
// rt-accumulate-weight-grads, rt-pack-attention-qkv): a program's kernels
// by the buffers they write and read, and the buffers an output or gradient
// binding holds (which no fold may remove).
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_RT_TRANSFORMS_KERNELUSES_H
#define DIALECTS_RT_TRANSFORMS_KERNELUSES_H

#include "dialects/Rt/IR/RtOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::rt {

struct KernelUses {
  DenseMap<Value, SmallVector<KernelOp, 2>> writers, readers;
  DenseSet<Value> bound;
  /// Each kernel's place in the body when the uses were read: the order of
  /// two of those kernels stays so while a pass folds others, where asking
  /// the block after each fold recomputes its whole order.
  DenseMap<Operation *, int64_t> position;

  /// The uses in `program`'s body.
  static KernelUses of(ProgramOp program) {
    KernelUses uses;
    for (Operation &op : program.getBody().front()) {
      if (isa<OutputOp, GradOp>(op))
        uses.bound.insert(op.getOperand(0));
      auto kernel = dyn_cast<KernelOp>(op);
      if (!kernel)
        continue;
      uses.position[kernel] = static_cast<int64_t>(uses.position.size());
      for (Value v : kernel.getInputs())
        if (!llvm::is_contained(uses.readers[v], kernel))
          uses.readers[v].push_back(kernel);
      for (Value v : kernel.getOutputs())
        uses.writers[v].push_back(kernel);
    }
    return uses;
  }

  /// The one kernel writing `buffer`, an rt.alloc that no binding holds, or
  /// null.
  KernelOp soleWriter(Value buffer) const {
    if (!buffer.getDefiningOp<AllocOp>() || bound.contains(buffer))
      return nullptr;
    auto it = writers.find(buffer);
    return it != writers.end() && it->second.size() == 1 ? it->second[0]
                                                         : nullptr;
  }

  /// The one kernel reading `buffer` (once), or null.
  KernelOp soleReader(Value buffer) const {
    auto it = readers.find(buffer);
    if (it == readers.end() || it->second.size() != 1)
      return nullptr;
    return readOnlyBy(buffer, it->second[0]) ? it->second[0] : nullptr;
  }

  /// Whether `buffer` is read by `reader` alone, once.
  bool readOnlyBy(Value buffer, KernelOp reader) const {
    auto it = readers.find(buffer);
    return it != readers.end() && it->second.size() == 1 &&
           it->second[0] == reader &&
           llvm::count(reader.getInputs(), buffer) == 1;
  }
};

} // namespace mlir::rt

#endif // DIALECTS_RT_TRANSFORMS_KERNELUSES_H
