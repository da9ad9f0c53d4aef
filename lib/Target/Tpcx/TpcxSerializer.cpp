//===- TpcxSerializer.cpp - rt module -> .tpcx executable -----------------===//
//
// Fills the FlatBuffers object API (fb::ExecutableT) from the rt ops, packs
// it, and runs the runtime's own checks on the bytes before anyone can write
// them. The rt ops are the schema's tables, so this is a walk, not a lowering.
//
//===----------------------------------------------------------------------===//

#include "tpc/Target/Tpcx.h"

#include "dialects/Rt/IR/RtOps.h"

#include "tpcrt/Executable.h"
#include "tpcx_generated.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <limits>

using namespace mlir;
using namespace mlir::rt;
namespace fb = tpcrt::fb;

// The rt enums mirror the schema's values exactly: a mismatch would make
// every kernel of that opcode run as another one. (Both opcode enums come
// from the kernel table, tpcrt/Kernels.def: this checks the chain.)
#define TPC_SAME_VALUE(RtEnum, FbEnum, name)                                   \
  static_assert(static_cast<int>(RtEnum::name) ==                              \
                    static_cast<int>(FbEnum::name),                            \
                #RtEnum "::" #name " differs from tpcx.fbs");
#define TPCX_KERNEL(Name, ...) TPC_SAME_VALUE(OpCode, fb::OpCode, Name)
#include "tpcrt/Kernels.def"
TPC_SAME_VALUE(ParamInit, fb::ParamInit, Normal)
TPC_SAME_VALUE(ParamInit, fb::ParamInit, Zeros)
TPC_SAME_VALUE(ParamInit, fb::ParamInit, Ones)
#undef TPC_SAME_VALUE
// ... and no value exists on one side only.
static_assert(getMaxEnumValForOpCode() ==
                  static_cast<unsigned>(fb::OpCode::MAX),
              "rt::OpCode and tpcx.fbs OpCode have different opcode counts");
static_assert(getMaxEnumValForParamInit() ==
                  static_cast<unsigned>(fb::ParamInit::MAX),
              "rt::ParamInit and tpcx.fbs ParamInit have different sizes");

namespace {

std::optional<fb::DType> dtypeOf(Type element) {
  if (element.isF32())
    return fb::DType::F32;
  if (element.isBF16())
    return fb::DType::BF16;
  if (element.isF16())
    return fb::DType::F16;
  if (element.isSignlessInteger(32))
    return fb::DType::I32;
  if (element.isSignlessInteger(64))
    return fb::DType::I64;
  if (element.isSignlessInteger(8))
    return fb::DType::U8;
  return std::nullopt;
}

/// Reads a non-negative i64 module attribute into a uint64 field.
LogicalResult readModuleSize(ModuleOp module, StringRef name, uint64_t &value) {
  auto attr = module->getAttrOfType<IntegerAttr>(name);
  if (!attr)
    return module.emitError() << "the module has no '" << name
                              << "': run rt-plan-memory before serializing";
  value = static_cast<uint64_t>(attr.getInt());
  return success();
}

class ExecutableBuilder {
public:
  explicit ExecutableBuilder(fb::ExecutableT &exe) : exe(exe) {}

  LogicalResult build(ModuleOp module);

private:
  FailureOr<uint32_t> addBuffer(Operation *op, Value buffer,
                                IntegerAttr offset);
  LogicalResult addKernel(KernelOp kernel);
  uint32_t idOf(Value buffer) { return ids.lookup(buffer); }
  /// One DimSplit per dimension (mesh axis indices), or none when `splits`
  /// is null.
  std::vector<std::unique_ptr<fb::DimSplitT>> dimSplits(SplitsAttr splits);

  fb::ExecutableT &exe;
  /// The program's mesh (null: one rank).
  MeshAttr mesh;
  llvm::DenseMap<Value, uint32_t> ids;
  /// Param index by Hugging Face name, for the state table.
  llvm::StringMap<uint32_t> paramIndex;
};

} // namespace

FailureOr<uint32_t> ExecutableBuilder::addBuffer(Operation *op, Value buffer,
                                                 IntegerAttr offset) {
  if (!offset)
    return op->emitError("buffer has no offset: run rt-plan-memory before "
                         "serializing");
  auto type = cast<MemRefType>(buffer.getType());
  std::optional<fb::DType> dtype = dtypeOf(type.getElementType());
  if (!dtype)
    return op->emitError() << "buffer type " << type
                           << " has no executable dtype";
  auto table = std::make_unique<fb::BufferT>();
  table->offset = static_cast<uint64_t>(offset.getInt());
  table->size = static_cast<uint64_t>(getBufferBytes(type));
  table->dtype = *dtype;
  table->shape.assign(type.getShape().begin(), type.getShape().end());
  auto id = static_cast<uint32_t>(exe.buffers.size());
  exe.buffers.push_back(std::move(table));
  ids[buffer] = id;
  return id;
}

std::vector<std::unique_ptr<fb::DimSplitT>>
ExecutableBuilder::dimSplits(SplitsAttr splits) {
  std::vector<std::unique_ptr<fb::DimSplitT>> tables;
  if (!splits)
    return tables;
  // The verifier checked the axes against the program's mesh.
  for (ArrayRef<unsigned> axes : getSplitAxes(mesh, splits)) {
    auto table = std::make_unique<fb::DimSplitT>();
    table->axes.assign(axes.begin(), axes.end());
    tables.push_back(std::move(table));
  }
  return tables;
}

LogicalResult ExecutableBuilder::addKernel(KernelOp kernel) {
  auto table = std::make_unique<fb::KernelT>();
  table->op = static_cast<fb::OpCode>(kernel.getOpcode());
  for (Value operand : kernel.getInputs())
    table->operands.push_back(idOf(operand));
  for (Value result : kernel.getOutputs())
    table->results.push_back(idOf(result));
  table->int_attrs.assign(kernel.getInts().begin(), kernel.getInts().end());
  table->float_attrs.assign(kernel.getFloats().begin(),
                            kernel.getFloats().end());
  table->flags = kernel.getFlags();
  table->splits = dimSplits(kernel.getSplitsAttr());
  table->stage = kernel.getStage().value_or(0);
  exe.kernels.push_back(std::move(table));
  return success();
}

LogicalResult ExecutableBuilder::build(ModuleOp module) {
  auto programs = module.getOps<ProgramOp>();
  if (!llvm::hasSingleElement(programs))
    return module.emitError() << "expected exactly one rt.program, found "
                              << llvm::range_size(programs);
  ProgramOp program = *programs.begin();

  exe.schema_version = tpcrt::kExecutableSchemaVersion;
  if (failed(readModuleSize(module, RtDialect::kArenaBytesAttrName,
                            exe.arena_bytes)) ||
      failed(readModuleSize(module, RtDialect::kPlannedPeakBytesAttrName,
                            exe.planned_peak_bytes)))
    return failure();
  if (auto peaks = module->getAttrOfType<DenseI64ArrayAttr>(
          RtDialect::kStagePlannedPeakBytesAttrName))
    for (int64_t bytes : peaks.asArrayRef())
      exe.stage_planned_peak_bytes.push_back(static_cast<uint64_t>(bytes));
  // The seed's 64 bits, stored as an i64; no seed means 0.
  if (auto seed = module->getAttrOfType<IntegerAttr>(RtDialect::kSeedAttrName))
    exe.seed = static_cast<uint64_t>(seed.getInt());
  // The Hugging Face config as imported (tpc-import), for checkpoints.
  if (auto config = module->getAttrOfType<StringAttr>("tpc.model_config"))
    exe.hf_config = config.getValue().str();
  if ((mesh = program.getMeshAttr()))
    for (unsigned axis = 0, e = mesh.getNumAxes(); axis < e; ++axis) {
      auto table = std::make_unique<fb::MeshAxisT>();
      table->name = mesh.getAxisName(axis).str();
      table->size = mesh.getSizes()[axis];
      exe.mesh.push_back(std::move(table));
    }

  // The program's pools first: pooled allocs name them by index (the
  // inputs pooled by microbatch get theirs after).
  if (auto pools = program->getAttrOfType<ArrayAttr>("pools"))
    for (auto [index, attr] : llvm::enumerate(pools)) {
      auto entry = dyn_cast<DictionaryAttr>(attr);
      auto slots = entry ? entry.getAs<IntegerAttr>("slots") : nullptr;
      auto stride = entry ? entry.getAs<IntegerAttr>("stride") : nullptr;
      if (!slots || !stride || slots.getInt() <= 0 || stride.getInt() < 0 ||
          slots.getInt() > std::numeric_limits<uint32_t>::max())
        return program.emitError()
               << "pool " << index
               << " needs 'slots' (positive) and 'stride' (run rt-plan-memory "
                  "before serializing)";
      auto pool = std::make_unique<fb::PoolT>();
      pool->slots = static_cast<uint32_t>(slots.getInt());
      pool->stride = static_cast<uint64_t>(stride.getInt());
      exe.pools.push_back(std::move(pool));
    }
  // Params are numbered in program order, wherever a state names one.
  for (auto [i, param] :
       llvm::enumerate(program.getBody().front().getOps<ParamOp>()))
    paramIndex[param.getHfName()] = i;
  for (Operation &op : program.getBody().front()) {
    if (auto param = dyn_cast<ParamOp>(op)) {
      FailureOr<uint32_t> id =
          addBuffer(param, param.getBuffer(), param.getOffsetAttr());
      if (failed(id))
        return failure();
      auto table = std::make_unique<fb::ParamT>();
      table->hf_name = param.getHfName().str();
      table->hf_shape.assign(param.getHfShape().begin(),
                             param.getHfShape().end());
      // The global view; the buffer is this rank's block of it, padded.
      // (The verifier checked that it fits in int64.)
      SmallVector<int64_t> view = *getGlobalShape(
          mesh, param.getSplitsAttr(), param.getBuffer().getType().getShape());
      if (std::optional<ArrayRef<int64_t>> unpadded = param.getViewShape()) {
        table->padded_shape.assign(view.begin(), view.end());
        view.assign(unpadded->begin(), unpadded->end());
      }
      table->view_shape.assign(view.begin(), view.end());
      table->splits = dimSplits(param.getSplitsAttr());
      table->buffer = *id;
      table->init = static_cast<fb::ParamInit>(param.getInit());
      table->init_std = param.getInitStd().convertToDouble();
      exe.params.push_back(std::move(table));
    } else if (auto input = dyn_cast<InputOp>(op)) {
      FailureOr<uint32_t> id =
          addBuffer(input, input.getBuffer(), input.getOffsetAttr());
      if (failed(id))
        return failure();
      // An input pooled by microbatch: its own pool, a slot a microbatch.
      if (std::optional<int64_t> slots = input.getMicrobatches()) {
        auto pool = std::make_unique<fb::PoolT>();
        pool->slots = static_cast<uint32_t>(*slots);
        pool->stride = (exe.buffers[*id]->size + 63) / 64 * 64;
        pool->by_microbatch = true;
        exe.buffers[*id]->pool = static_cast<int32_t>(exe.pools.size());
        exe.pools.push_back(std::move(pool));
      }
      auto table = std::make_unique<fb::BindingT>();
      table->name = input.getName().str();
      table->buffer = *id;
      table->value_bound = input.getValueBoundAttr().getInt();
      table->splits = dimSplits(input.getSplitsAttr());
      exe.inputs.push_back(std::move(table));
    } else if (auto state = dyn_cast<StateOp>(op)) {
      FailureOr<uint32_t> id =
          addBuffer(state, state.getBuffer(), state.getOffsetAttr());
      if (failed(id))
        return failure();
      auto table = std::make_unique<fb::StateT>();
      table->name = state.getName().str();
      // The program verifier checked that the parameter exists.
      table->param = paramIndex.lookup(state.getParam());
      table->buffer = *id;
      exe.state.push_back(std::move(table));
    } else if (auto grad = dyn_cast<GradOp>(op)) {
      auto table = std::make_unique<fb::BindingT>();
      table->name = grad.getName().str();
      table->buffer = idOf(grad.getBuffer());
      exe.grads.push_back(std::move(table));
    } else if (auto alloc = dyn_cast<AllocOp>(op)) {
      FailureOr<uint32_t> id =
          addBuffer(alloc, alloc.getBuffer(), alloc.getOffsetAttr());
      if (failed(id))
        return failure();
      // (The program verifier checked the index.)
      if (std::optional<int64_t> pool = alloc.getPool())
        exe.buffers[*id]->pool = static_cast<int32_t>(*pool);
    } else if (auto kernel = dyn_cast<KernelOp>(op)) {
      if (failed(addKernel(kernel)))
        return failure();
    } else if (auto output = dyn_cast<OutputOp>(op)) {
      auto table = std::make_unique<fb::BindingT>();
      table->name = output.getName().str();
      table->buffer = idOf(output.getBuffer());
      exe.outputs.push_back(std::move(table));
    } else {
      return op.emitError()
             << "'" << op.getName() << "' has no place in the executable";
    }
  }
  // A program of functions run by actions (tpc-lower-to-rt actions=true):
  // one action list, or one per pipeline stage.
  if (auto functions = program->getAttrOfType<ArrayAttr>("functions")) {
    for (auto function : functions.getAsRange<DictionaryAttr>()) {
      auto table = std::make_unique<fb::FunctionT>();
      table->name = function.getAs<StringAttr>("name").getValue().str();
      table->first_kernel = static_cast<uint32_t>(
          function.getAs<IntegerAttr>("first").getInt());
      table->kernel_count = static_cast<uint32_t>(
          function.getAs<IntegerAttr>("count").getInt());
      exe.functions.push_back(std::move(table));
    }
    SmallVector<DenseI64ArrayAttr> lists;
    if (auto staged = program->getAttrOfType<ArrayAttr>("stage_actions"))
      lists.append(llvm::to_vector(staged.getAsRange<DenseI64ArrayAttr>()));
    else if (auto actions =
                 program->getAttrOfType<DenseI64ArrayAttr>("actions"))
      lists.push_back(actions);
    for (DenseI64ArrayAttr actions : lists) {
      auto stage = std::make_unique<fb::StageActionsT>();
      stage->actions.reserve(actions.size() / 3);
      for (int64_t a = 0; a + 2 < actions.size(); a += 3)
        stage->actions.emplace_back(static_cast<uint32_t>(actions[a]),
                                    static_cast<uint32_t>(actions[a + 1]),
                                    static_cast<uint32_t>(actions[a + 2]));
      exe.stage_actions.push_back(std::move(stage));
    }
  }
  return success();
}

LogicalResult mlir::rt::serializeTpcx(ModuleOp module,
                                      std::vector<uint8_t> &payload) {
  fb::ExecutableT exe;
  if (failed(ExecutableBuilder(exe).build(module)))
    return failure();

  flatbuffers::FlatBufferBuilder fbb;
  fb::FinishExecutableBuffer(fbb, fb::Executable::Pack(fbb, &exe));
  // What the runtime's loader would check, minus the framing it adds later.
  flatbuffers::Verifier verifier(fbb.GetBufferPointer(), fbb.GetSize(),
                                 tpcrt::kMaxVerifierDepth,
                                 tpcrt::kMaxVerifierTables);
  if (!fb::VerifyExecutableBuffer(verifier))
    return module.emitError("internal error: the executable fails the "
                            "FlatBuffers verifier");
  if (tpcrt::Status status =
          tpcrt::checkExecutable(*fb::GetExecutable(fbb.GetBufferPointer()));
      !status)
    return module.emitError() << "internal error: the runtime would refuse "
                                 "this executable: "
                              << status.message();
  payload.assign(fbb.GetBufferPointer(),
                 fbb.GetBufferPointer() + fbb.GetSize());
  return success();
}

LogicalResult mlir::rt::writeTpcxFile(ModuleOp module, StringRef path) {
  std::vector<uint8_t> payload;
  if (failed(serializeTpcx(module, payload)))
    return failure();
  if (tpcrt::Status status = tpcrt::writeExecutableFile(
          path.str(), payload.data(), payload.size());
      !status)
    return emitError(UnknownLoc::get(module.getContext()))
           << "cannot write '" << path << "': " << status.message();
  return success();
}
