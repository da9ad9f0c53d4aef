//===- KernelRoles.h - reading Kernels.def's role lists ---------*- C++ -*-===//
//
// Plain C++ over the role strings of a Kernels.def row, shared by the runtime
// (tpcrt/KernelTable.h) and the compiler's rt dialect, which both build their
// tables from the same rows.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_KERNELROLES_H
#define TPCRT_KERNELROLES_H

#include <cstddef>
#include <cstring>
#include <string>

namespace tpcrt {

/// Entry `index` of the comma-separated `list`, or "" past its end.
inline std::string roleAt(const char *list, size_t index) {
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
inline int updatedOperand(const char *operandRoles, const char *resultRoles,
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

} // namespace tpcrt

#endif // TPCRT_KERNELROLES_H
