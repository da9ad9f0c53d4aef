//===- TpcOptimizerOps.cpp - optimizer op verifiers -----------------------===//
//
// Hyperparameters are checked where they are set, so that a bad value is a
// compile-time diagnostic naming it rather than NaN weights after a step.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/IR/TpcVerify.h"

#include "mlir/IR/Builders.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tpc;
using namespace mlir::tpc::checks;

static constexpr double kInf = std::numeric_limits<double>::infinity();

/// Checks `low <= value < high` (or `<= high` when `closed`), finite.
static LogicalResult checkRange(Operation *op, StringRef name, double value,
                                double low, double high, bool closed = false) {
  bool inside = std::isfinite(value) && value >= low &&
                (closed ? value <= high : value < high);
  if (inside)
    return success();
  InFlightDiagnostic diag = op->emitOpError() << name << " " << value
                                              << " is outside [" << low << ", ";
  if (std::isinf(high))
    return diag << "inf)";
  return diag << high << (closed ? "]" : ")");
}

LogicalResult SumSquaresOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  return success();
}

LogicalResult ClipCoefficientOp::verify() {
  return checkRange(*this, "max_norm", getMaxNorm().convertToDouble(), 0.0,
                    kInf);
}

LogicalResult LrScheduleOp::verify() {
  double lr = getLr().convertToDouble();
  // torch.optim takes lr >= 0 (0: the update leaves the weights, AdamW's
  // decay included, as they are).
  if (!(lr >= 0.0 && std::isfinite(lr)))
    return emitOpError() << "lr must be non-negative and finite but is "
                         << lr;
  if (failed(checkRange(*this, "min_lr", getMinLr().convertToDouble(), 0.0, lr,
                        /*closed=*/true)))
    return failure();
  int64_t warmup = getWarmupAttr().getInt(), total = getTotalAttr().getInt();
  if (warmup < 0)
    return emitOpError() << "warmup " << warmup << " is negative";
  if (getSchedule() == LrScheduleKind::Constant &&
      (warmup != 0 || total != 0 || !getMinLr().isZero()))
    return emitOpError() << "a constant schedule takes no warmup, total or "
                            "min_lr (they belong to cosine)";
  if (getSchedule() == LrScheduleKind::Cosine && total <= warmup)
    return emitOpError() << "cosine schedule needs total steps (" << total
                         << ") greater than the warm-up steps (" << warmup
                         << ")";
  return success();
}

LogicalResult AdamWUpdateOp::verify() {
  if (failed(
          checkRange(*this, "beta1", getBeta1().convertToDouble(), 0.0, 1.0)) ||
      failed(
          checkRange(*this, "beta2", getBeta2().convertToDouble(), 0.0, 1.0)) ||
      failed(checkRange(*this, "weight_decay",
                        getWeightDecay().convertToDouble(), 0.0, kInf)))
    return failure();
  double eps = getEps().convertToDouble();
  if (!(eps > 0.0 && std::isfinite(eps)))
    return emitOpError() << "eps must be positive and finite but is " << eps;
  return success();
}

LogicalResult SgdUpdateOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getParam().getType());
  if (adaptor.getMomentumBuffer())
    inferred.push_back(adaptor.getParam().getType());
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  if (getGrad().getType() != getParam().getType())
    return emitOpError() << "grad type " << getGrad().getType()
                         << " differs from the param type "
                         << getParam().getType();
  double momentum = getMomentum().convertToDouble();
  if (failed(checkRange(*this, "momentum", momentum, 0.0, kInf)) ||
      failed(checkRange(*this, "weight_decay",
                        getWeightDecay().convertToDouble(), 0.0, kInf)))
    return failure();
  Value buffer = getMomentumBuffer();
  if ((momentum != 0.0) != !!buffer)
    return emitOpError() << "a momentum buffer is needed exactly when the "
                            "momentum is non-zero, but momentum is "
                         << momentum << (buffer ? " with" : " without")
                         << " a buffer";
  if (buffer && buffer.getType() != getParam().getType())
    return emitOpError() << "momentum_buffer type " << buffer.getType()
                         << " differs from the param type "
                         << getParam().getType();
  return success();
}
