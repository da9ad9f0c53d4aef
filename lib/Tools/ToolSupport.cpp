//===- ToolSupport.cpp - shared plumbing of the tpc command-line tools ---===//

#include "tpc/Tools/ToolSupport.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <string>

namespace cl = llvm::cl;

namespace mlir::tpc {

int reportError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs()) << message << "\n";
  return 1;
}

llvm::raw_ostream &printSeverityLabel(llvm::raw_ostream &os,
                                      DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return llvm::WithColor::error(os);
  case DiagnosticSeverity::Warning:
    return llvm::WithColor::warning(os);
  case DiagnosticSeverity::Note:
    return llvm::WithColor::note(os);
  case DiagnosticSeverity::Remark:
    return llvm::WithColor::remark(os);
  }
  return os;
}

void registerLongLineDiagnostics(MLIRContext &context,
                                 llvm::SourceMgr &sourceMgr,
                                 unsigned maxColumns) {
  context.getDiagEngine().registerHandler(
      [&sourceMgr, maxColumns](Diagnostic &diag) -> LogicalResult {
        auto loc = dyn_cast<FileLineColLoc>(diag.getLocation());
        if (!loc || loc.getLine() == 0 || sourceMgr.getNumBuffers() == 0)
          return failure();
        unsigned id = sourceMgr.getMainFileID();
        const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(id);
        if (buffer->getBufferIdentifier() != loc.getFilename().getValue())
          return failure();
        llvm::SMLoc at = sourceMgr.FindLocForLineAndColumn(
            id, loc.getLine(), std::max(loc.getColumn(), 1u));
        if (!at.isValid())
          return failure();
        llvm::StringRef text = buffer->getBuffer();
        size_t offset = at.getPointer() - text.data();
        size_t start = text.rfind('\n', offset);
        start = start == llvm::StringRef::npos ? 0 : start + 1;
        size_t end = text.find_first_of("\r\n", offset);
        llvm::StringRef line = text.slice(start, end);
        if (line.size() <= maxColumns)
          return failure();
        // A window of maxColumns around the column, inside the line.
        size_t column = offset - start;
        size_t first = column > maxColumns / 2 ? column - maxColumns / 2 : 0;
        first = std::min(first, line.size() - maxColumns);
        std::string shown = (first > 0 ? "..." : "") +
                            line.substr(first, maxColumns).str() +
                            (first + maxColumns < line.size() ? "..." : "");
        size_t caret = column - first + (first > 0 ? 3 : 0);
        llvm::raw_ostream &os = llvm::errs();
        os << loc.getFilename().getValue() << ":" << loc.getLine() << ":"
           << loc.getColumn() << ": ";
        printSeverityLabel(os, diag.getSeverity()) << diag.str() << "\n"
                                  << shown << "\n"
                                  << std::string(caret, ' ') << "^\n";
        for (Diagnostic &note : diag.getNotes())
          printSeverityLabel(os, note.getSeverity()) << note.str() << "\n";
        return success();
      });
}

namespace {
std::string &commandLineErrors() {
  static std::string errors;
  return errors;
}
} // namespace

llvm::raw_ostream &commandLineErrorStream() {
  static llvm::raw_string_ostream stream(commandLineErrors());
  return stream;
}

bool parseToolCommandLine(int argc, char **argv, llvm::StringRef overview) {
  // llvm::cl prints a value flag given last without its value straight to
  // stderr in its own format: report it like every other error instead.
  llvm::StringRef last = argc > 1 ? argv[argc - 1] : "";
  bool afterDashDash = llvm::is_contained(
      llvm::ArrayRef<char *>(argv + 1, argc > 1 ? argc - 2 : 0),
      llvm::StringRef("--"));
  if (!afterDashDash && last.size() > 1 && last.front() == '-') {
    llvm::StringRef name = last.drop_while([](char c) { return c == '-'; });
    auto &options = cl::getRegisteredOptions();
    auto it = options.find(name);
    if (it != options.end() &&
        it->second->getValueExpectedFlag() == cl::ValueRequired) {
      reportError(last + ": requires a value");
      return false;
    }
  }
  if (cl::ParseCommandLineOptions(argc, argv, overview,
                                  &commandLineErrorStream()))
    return true;
  llvm::StringRef errors = commandLineErrors();
  std::string prefix = (llvm::sys::path::filename(argv[0]) + ": ").str();
  llvm::SmallVector<llvm::StringRef> lines;
  errors.split(lines, '\n', -1, /*KeepEmpty=*/false);
  // The first line is the error; llvm::cl may add hints ("Did you mean").
  for (auto [i, line] : llvm::enumerate(lines)) {
    line.consume_front(prefix);
    line.consume_front(std::string(argv[0]) + ": ");
    if (i == 0)
      reportError(line.trim());
    else
      llvm::errs() << "  " << line.trim() << "\n";
  }
  return false;
}

int printModuleToFile(mlir::ModuleOp module, llvm::StringRef path) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(path, &error);
  if (!out)
    return reportError(error);
  module->print(out->os());
  out->os() << "\n";
  out->os().flush();
  if (std::error_code ec = out->os().error()) {
    // Without clearing it, the stream would abort at destruction.
    out->os().clear_error();
    return reportError(path + ": " + ec.message());
  }
  out->keep();
  return 0;
}

} // namespace mlir::tpc
