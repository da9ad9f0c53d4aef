//===- SanitizerOptions.cpp - ASan defaults of the fuzzers ----------------===//
//
// The fuzzers mix instrumented code (tpc's, and the LLVM/MLIR header code it
// inlines) with the installed, uninstrumented LLVM and MLIR libraries. LLVM's
// BumpPtrAllocator poisons the unused part of its slabs when compiled with
// ASan (llvm/Support/Compiler.h) and unpoisons each allocation: an
// allocation made by the uninstrumented copy of its code is never
// unpoisoned, and the next instrumented read of it would be reported
// (use-after-poison in mlir::Dialect::addType on the first MLIRContext).
// Manual poisoning is off, so ASan reports only what it finds itself.
// UBSan prints the stack of what it finds (run.sh reads it to tell tpc's
// code from upstream's).
//
//===----------------------------------------------------------------------===//

extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

extern "C" const char *__ubsan_default_options() {
  return "print_stacktrace=1";
}
