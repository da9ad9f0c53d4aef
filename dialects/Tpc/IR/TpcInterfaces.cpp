//===- TpcInterfaces.cpp - tpc op interfaces ------------------------------===//

#include "dialects/Tpc/IR/TpcInterfaces.h"

using namespace mlir;
using namespace mlir::tpc;

#include "dialects/Tpc/IR/TpcInterfaces.cpp.inc"
