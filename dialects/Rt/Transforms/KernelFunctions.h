//===- KernelFunctions.h - which function each kernel belongs to -*- C++ -*-===//
//
// A program run by actions carries `functions`, each a range {name, first,
// count} of its kernels, and the action lists that run them. A pass that
// adds, moves or copies kernels reads the ranges into a kernel -> function
// map, edits the map beside the IR, and writes the ranges back from it (and
// the action lists, where the functions' indices changed).
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_RT_TRANSFORMS_KERNELFUNCTIONS_H
#define DIALECTS_RT_TRANSFORMS_KERNELFUNCTIONS_H

#include "dialects/Rt/IR/RtOps.h"

#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace mlir::rt {

struct KernelFunctions {
  /// The function names, by index.
  SmallVector<StringAttr> names;
  /// Each kernel's function (kernels of no range are absent).
  DenseMap<Operation *, int64_t> functionOf;

  /// The ranges of `program`; nullopt when it has no `functions` or they
  /// are malformed (the verifier and rt-plan-memory word that).
  static std::optional<KernelFunctions> read(ProgramOp program);

  /// A new function, empty until kernels are mapped to it.
  int64_t add(StringAttr name) {
    names.push_back(name);
    return names.size() - 1;
  }

  /// Writes `functions` again from `functionOf`, in kernel order: functions
  /// left without kernels are dropped. Returns each old index's new one
  /// (-1: dropped), or fails, naming `pass`, where a function's kernels are
  /// no longer contiguous.
  FailureOr<SmallVector<int64_t>> write(ProgramOp program,
                                        StringRef pass) const;

  /// write(), then the action lists renumbered to the new indices (for a
  /// pass that only removed or merged kernels).
  LogicalResult writeWithActions(ProgramOp program, StringRef pass) const;
};

/// A program's action lists: `stage_actions`' (one per pipeline stage), or
/// `actions` as the one list; three integers per action (function,
/// microbatch, slot).
struct ActionLists {
  SmallVector<SmallVector<int64_t, 0>> lists;
  bool staged = false;

  /// Nullopt without either attribute or where a list is not an
  /// array<i64> of triples.
  static std::optional<ActionLists> read(ProgramOp program);

  /// Writes the lists back, each action's function mapped through
  /// `newIndex` (KernelFunctions::write); an action of a dropped function
  /// is dropped.
  void write(ProgramOp program, ArrayRef<int64_t> newIndex) const;
};

} // namespace mlir::rt

#endif // DIALECTS_RT_TRANSFORMS_KERNELFUNCTIONS_H
