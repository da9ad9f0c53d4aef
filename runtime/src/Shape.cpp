//===- Shape.cpp - tensor shapes: element counts, text --------------------===//

#include "tpcrt/Shape.h"

using namespace tpcrt;

std::string tpcrt::formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool tpcrt::numElementsOf(const std::vector<int64_t> &shape, int64_t &count) {
  bool hasZero = false;
  for (int64_t dim : shape) {
    if (dim < 0)
      return false;
    hasZero |= dim == 0;
  }
  // [2^62, 2^62, 0] is empty: no overflow to report.
  if (hasZero) {
    count = 0;
    return true;
  }
  int64_t product = 1;
  for (int64_t dim : shape)
    if (__builtin_mul_overflow(product, dim, &product))
      return false;
  count = product;
  return true;
}
