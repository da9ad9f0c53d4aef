//===- ConfigFuzzer.cpp - libFuzzer target: the config.json reader -------===//
//
// Feeds each input to parseModelConfig as the text of a Hugging Face
// config.json, once with tpc-import's defaults and once with every override
// set (--batch, --seq, --num-layers, --dropout, --dtype bf16, unfused
// attention, logits). A config the reader accepts is then built into IR and
// verified, as tpc-import does: the reader promises the builder a fully
// validated config (every divisibility, every tensor's element count within
// int64), so a builder crash or a module that does not verify on an
// accepted config is the reader's bug too. The layer count is cut to at most
// two for the build (the reader bounds it; what it guards is the time of a
// 10000-layer import, not its correctness).
//
// A refusal is the expected outcome for most inputs: only a crash (ASan,
// UBSan, an assertion, a stack overflow), a leak, a timeout or the abort
// below is a finding.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcDialect.h"
#include "tpc/Import/ModelBuilder.h"
#include "tpc/Import/ModelConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

using namespace mlir;
using namespace mlir::tpc;

namespace {

[[noreturn]] void fail(const char *what, llvm::StringRef detail = "") {
  llvm::errs() << "tpc-fuzz-config: " << what;
  if (!detail.empty())
    llvm::errs() << ": " << detail;
  llvm::errs() << "\n";
  std::abort();
}

void buildAndVerify(ModelConfig config, const ImportOptions &options) {
  config.numLayers = std::min<int64_t>(config.numLayers, 2);
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<TpcDialect, func::FuncDialect>();
  std::string diagnostics;
  ScopedDiagnosticHandler keep(&context, [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = buildModel(context, config, options);
  if (!module)
    fail("buildModel returned no module for an accepted config");
  if (failed(verify(*module)))
    fail("the module built from an accepted config does not verify",
         diagnostics);
}

void check(llvm::StringRef text, ImportOptions options) {
  // TPC_FUZZ_VERBOSE=1 prints what the input came to (replaying an input).
  static const bool verbose = std::getenv("TPC_FUZZ_VERBOSE");
  llvm::Expected<ModelConfig> config = parseModelConfig(text, options);
  if (!config) {
    std::string message = llvm::toString(config.takeError());
    if (verbose)
      llvm::errs() << "refused: " << message << "\n";
    // Every refusal reads `<field>: <why>`.
    if (message.find(": ") == std::string::npos)
      fail("a refusal without `<field>: `", message);
    return;
  }
  if (!options.seq || *options.seq < 1 || *options.seq > config->maxPositions)
    fail("an accepted config left --seq unset or out of range");
  if (verbose)
    llvm::errs() << "accepted\n";
  buildAndVerify(std::move(*config), options);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  check(text, ImportOptions());

  ImportOptions overrides;
  overrides.batch = 3;
  overrides.seq = 7;
  overrides.numLayers = 1;
  overrides.dropout = 0.25;
  overrides.dtype = ElementDtype::BF16;
  overrides.attention = AttentionForm::Unfused;
  overrides.output = ModelOutput::Logits;
  check(text, overrides);
  return 0;
}
