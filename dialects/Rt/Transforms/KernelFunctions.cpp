//===- KernelFunctions.cpp - which function each kernel belongs to --------===//

#include "dialects/Rt/Transforms/KernelFunctions.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::rt;

std::optional<KernelFunctions> KernelFunctions::read(ProgramOp program) {
  auto functions = program->getAttrOfType<ArrayAttr>("functions");
  if (!functions)
    return std::nullopt;
  SmallVector<KernelOp> kernels(program.getBody().front().getOps<KernelOp>());
  KernelFunctions result;
  for (auto [f, attr] : llvm::enumerate(functions)) {
    auto range = dyn_cast<DictionaryAttr>(attr);
    IntegerAttr first = range ? range.getAs<IntegerAttr>("first") : nullptr;
    IntegerAttr count = range ? range.getAs<IntegerAttr>("count") : nullptr;
    if (!first || !count || first.getInt() < 0 || count.getInt() < 0 ||
        first.getInt() + count.getInt() > static_cast<int64_t>(kernels.size()))
      return std::nullopt;
    auto name = range.getAs<StringAttr>("name");
    result.names.push_back(name ? name : StringAttr::get(program.getContext()));
    for (int64_t k = first.getInt(); k < first.getInt() + count.getInt(); ++k)
      if (!result.functionOf.try_emplace(kernels[k], f).second)
        return std::nullopt;
  }
  return result;
}

FailureOr<SmallVector<int64_t>>
KernelFunctions::write(ProgramOp program, StringRef pass) const {
  int64_t numFunctions = names.size();
  SmallVector<int64_t> first(numFunctions, -1), count(numFunctions, 0);
  SmallVector<int64_t> order; // functions by first kernel
  int64_t index = 0, previous = -1;
  for (auto kernel : program.getBody().front().getOps<KernelOp>()) {
    auto it = functionOf.find(kernel);
    int64_t f = it == functionOf.end() ? -1 : it->second;
    if (f >= 0 && f != previous) {
      if (first[f] >= 0)
        return program.emitError()
               << pass << ": function " << f << " ('" << names[f].getValue()
               << "') is no longer contiguous at kernel " << index;
      first[f] = index;
      order.push_back(f);
    }
    if (f >= 0)
      ++count[f];
    previous = f;
    ++index;
  }
  Builder b(program.getContext());
  SmallVector<Attribute> ranges;
  SmallVector<int64_t> newIndex(numFunctions, -1);
  for (int64_t f : order) {
    newIndex[f] = ranges.size();
    ranges.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("name", names[f]),
         b.getNamedAttr("first", b.getI64IntegerAttr(first[f])),
         b.getNamedAttr("count", b.getI64IntegerAttr(count[f]))}));
  }
  program->setAttr("functions", b.getArrayAttr(ranges));
  return newIndex;
}

std::optional<ActionLists> ActionLists::read(ProgramOp program) {
  ActionLists result;
  SmallVector<Attribute> lists;
  if (auto staged = program->getAttrOfType<ArrayAttr>("stage_actions")) {
    result.staged = true;
    llvm::append_range(lists, staged.getValue());
  } else if (Attribute one = program->getAttr("actions")) {
    lists.push_back(one);
  } else {
    return std::nullopt;
  }
  for (Attribute attr : lists) {
    auto list = dyn_cast<DenseI64ArrayAttr>(attr);
    if (!list || list.size() % 3 != 0)
      return std::nullopt;
    result.lists.emplace_back(list.asArrayRef());
  }
  return result;
}

void ActionLists::write(ProgramOp program, ArrayRef<int64_t> newIndex) const {
  Builder b(program.getContext());
  SmallVector<Attribute> written;
  for (const auto &list : lists) {
    SmallVector<int64_t> triples;
    for (size_t a = 0; a + 2 < list.size(); a += 3) {
      int64_t f = list[a];
      // One naming no function stays, for rt-plan-memory to word.
      bool known = f >= 0 && f < static_cast<int64_t>(newIndex.size());
      if (known && newIndex[f] < 0)
        continue;
      triples.append({known ? newIndex[f] : f, list[a + 1], list[a + 2]});
    }
    written.push_back(b.getDenseI64ArrayAttr(triples));
  }
  if (staged)
    program->setAttr("stage_actions", b.getArrayAttr(written));
  else
    program->setAttr("actions", written.front());
}

LogicalResult KernelFunctions::writeWithActions(ProgramOp program,
                                                StringRef pass) const {
  FailureOr<SmallVector<int64_t>> newIndex = write(program, pass);
  if (failed(newIndex))
    return failure();
  if (std::optional<ActionLists> lists = ActionLists::read(program))
    lists->write(program, *newIndex);
  return success();
}
