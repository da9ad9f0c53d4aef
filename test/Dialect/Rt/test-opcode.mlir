// The test-only opcode test_copy (issue 12): one row of the kernel table
// (runtime/include/tpcrt/Kernels.def), a decoder it names (copy's) and the
// CPU device's case are all it has. The verifier knows it (its counts from
// the row, its dtype and shape rule from the runtime's decoder), the
// generated reference lists it, and runtime/test/ExecutableTest.cpp
// (TestOpcode) loads, decodes and runs it.
// RUN: tpc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: grep -F '| test_copy (50) | compute | input | result | may be the operand' %tpc_src_root/docs/runtime/opcodes.md

// CHECK: rt.kernel test_copy(%{{.*}}) -> (%{{.*}}) : memref<2x4xf32> -> memref<8xf32>
rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<8xf32>
  rt.kernel test_copy(%x) -> (%y) : memref<2x4xf32> -> memref<8xf32>
  rt.output "y" %y : memref<8xf32>
}

// -----

// Its row: one operand.
rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{test_copy: has 2 operands, expected 1}}
  rt.kernel test_copy(%x, %x) -> (%y) : memref<2x4xf32>, memref<2x4xf32> -> memref<2x4xf32>
  rt.output "y" %y : memref<2x4xf32>
}

// -----

// Its decoder: copy's rule.
rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<9xf32>
  // expected-error @+1 {{test_copy: input [2, 4] and result [9] have different element counts}}
  rt.kernel test_copy(%x) -> (%y) : memref<2x4xf32> -> memref<9xf32>
  rt.output "y" %y : memref<9xf32>
}
