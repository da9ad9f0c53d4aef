//===- KernelTable.cpp - the rows of Kernels.def for the runtime ----------===//

#include "tpcrt/KernelTable.h"

#include <cstring>


using namespace tpcrt;

namespace {

constexpr KernelInfo kKernels[] = {
#define TPCX_ANY kAnyCount
#define TPCX_RANK kRankInts
#define TPCX_KERNEL(Name, Value, Mnemonic, MinOperands, MaxOperands, Results,   \
                    MinInts, MaxInts, Floats, FlagMask, Aliasing_,              \
                    OperandRoles, ResultRoles, Decoder, Kind, ...)                   \
  {fb::OpCode::Name,   Mnemonic,  MinOperands,  MaxOperands,                    \
   Results,            MinInts,   MaxInts,      Floats,                         \
   FlagMask,           Aliasing::Aliasing_,     KernelKind::Kind,               \
   OperandRoles,       ResultRoles},
#include "tpcrt/Kernels.def"
};

constexpr size_t kNumKernels = sizeof(kKernels) / sizeof(kKernels[0]);

// tpcx.fbs's enum against the table: the same values, none missing.
#define TPCX_KERNEL(Name, Value, ...)                                          \
  static_assert(static_cast<int>(fb::OpCode::Name) == Value,                   \
                "tpcx.fbs OpCode::" #Name " differs from Kernels.def");
#include "tpcrt/Kernels.def"
static_assert(kNumKernels == static_cast<size_t>(fb::OpCode::MAX) + 1,
              "tpcx.fbs and Kernels.def have different numbers of opcodes");

constexpr bool rowsInOpcodeOrder() {
  for (size_t i = 0; i < kNumKernels; ++i)
    if (static_cast<size_t>(kKernels[i].op) != i)
      return false;
  return true;
}
static_assert(rowsInOpcodeOrder(),
              "Kernels.def rows must be in opcode order, values 0, 1, ...");

/// Entry `index` of the comma-separated `list`, or "" past its end.
std::string roleAt(const char *list, size_t index) {
  const char *begin = list;
  for (size_t i = 0; i < index; ++i) {
    begin = std::strchr(begin, ',');
    if (!begin)
      return "";
    ++begin;
  }
  const char *end = std::strchr(begin, ',');
  return end ? std::string(begin, end) : std::string(begin);
}

/// For a kernel that updates in place (Aliasing Update), the operand whose
/// role result `result` has; -1 if none does.
int updatedOperand(const char *operandRoles, const char *resultRoles,
                          size_t result) {
  std::string name = roleAt(resultRoles, result);
  if (name.empty())
    return -1;
  for (size_t j = 0;; ++j) {
    std::string operand = roleAt(operandRoles, j);
    if (operand.empty())
      return -1;
    if (operand == name)
      return static_cast<int>(j);
  }
}

} // namespace

const KernelInfo *tpcrt::kernelInfo(fb::OpCode op) {
  auto index = static_cast<size_t>(op);
  return index < kNumKernels ? &kKernels[index] : nullptr;
}

std::string tpcrt::operandRole(fb::OpCode op, size_t j) {
  const KernelInfo *info = kernelInfo(op);
  std::string name = info ? roleAt(info->operandRoles, j) : "";
  return name.empty() ? "operand " + std::to_string(j) : name;
}

std::string tpcrt::resultRole(fb::OpCode op, size_t r) {
  const KernelInfo *info = kernelInfo(op);
  std::string name = info ? roleAt(info->resultRoles, r) : "";
  return name.empty() ? "result " + std::to_string(r) : name;
}

int tpcrt::inPlaceOperand(fb::OpCode op, size_t result) {
  const KernelInfo *info = kernelInfo(op);
  if (!info || info->aliasing != Aliasing::Update ||
      result >= info->numResults)
    return -1;
  return updatedOperand(info->operandRoles, info->resultRoles, result);
}
