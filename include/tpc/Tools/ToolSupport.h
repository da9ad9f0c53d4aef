//===- ToolSupport.h - shared plumbing of the tpc command-line tools -*- C++ -*-===//
//
// What every tpc tool does the same way: command-line errors and other errors
// printed as `error: <what>` with exit status 1, and IR written to a file (or
// `-` for stdout) without losing a write error.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_TOOLS_TOOLSUPPORT_H
#define TPC_TOOLS_TOOLSUPPORT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir {
class MLIRContext;
class ModuleOp;
enum class DiagnosticSeverity;
} // namespace mlir

namespace mlir::tpc {

/// Prints `error: <message>` to stderr; returns the exit status 1.
int reportError(const llvm::Twine &message);

/// llvm::cl::ParseCommandLineOptions with tpc's error convention: a value
/// flag given last without its value, an unknown flag or a bad value is
/// printed as `error: ...` (llvm::cl's hints indented below). Returns false
/// on an error (the caller exits with status 1).
bool parseToolCommandLine(int argc, char **argv, llvm::StringRef overview);

/// The stream parseToolCommandLine collects llvm::cl's errors in: a custom
/// cl::parser writes its message (`--flag: why`) here, so that it is printed
/// in the same `error: ...` form.
llvm::raw_ostream &commandLineErrorStream();

/// Prints a diagnostic's label (`error: `, `warning: `, ...) to `os` in
/// llvm::WithColor's colours; returns `os` for the message.
llvm::raw_ostream &printSeverityLabel(llvm::raw_ostream &os,
                                      mlir::DiagnosticSeverity severity);

/// Takes the diagnostics located on a line of `sourceMgr`'s main file longer
/// than `maxColumns` (a module's attributes carry the whole Hugging Face
/// config, @forward's signature every parameter) and prints them as
/// SourceMgrDiagnosticHandler would, `file:line:col: error: ...`, with the
/// line cut to `maxColumns` around the column (`...` where cut) and the
/// caret under it; the others go on to the handlers registered before.
void registerLongLineDiagnostics(mlir::MLIRContext &context,
                                 llvm::SourceMgr &sourceMgr,
                                 unsigned maxColumns = 160);

/// Prints `module` to `path` (`-` is stdout), followed by a newline. Returns
/// the exit status: 0, or 1 after reporting an open or write error.
int printModuleToFile(mlir::ModuleOp module, llvm::StringRef path);

} // namespace mlir::tpc

#endif // TPC_TOOLS_TOOLSUPPORT_H
