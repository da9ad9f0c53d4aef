// rt-bucket-reductions: an all_reduce moves down to just before the next
// all_reduce of its group when nothing between touches its buffers and the
// run stays within bucket-bytes; the CUDA device issues each run as one
// NCCL group.
// RUN: tpc-opt %s --split-input-file --rt-bucket-reductions | FileCheck %s
// RUN: tpc-opt %s --split-input-file --rt-bucket-reductions="bucket-bytes=128" | FileCheck %s --check-prefix=SMALL
// RUN: tpc-opt %s --split-input-file --rt-bucket-reductions="bucket-bytes=0" | FileCheck %s --check-prefix=OFF

// Three gradients reduced as their writers finish: the first two (64 bytes
// each) join the third's reduction, the run [r1, r2, r3]. With a 128-byte
// bucket only r2 joins r3 (r1 would make 192 bytes); with 0 nothing moves.
// CHECK-LABEL: rt.program @train_step mesh [dp = 2]
// CHECK: rt.kernel silu(%{{.*}}) -> (%[[A:.*]]) :
// CHECK-NEXT: %[[B:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%{{.*}}) -> (%[[B]])
// CHECK-NEXT: %[[C:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%{{.*}}) -> (%[[C]])
// CHECK-NEXT: rt.kernel all_reduce(%[[A]]) -> (%[[A]]) ints [0]
// CHECK-NEXT: rt.kernel all_reduce(%[[B]]) -> (%[[B]]) ints [0]
// CHECK-NEXT: rt.kernel all_reduce(%[[C]]) -> (%[[C]]) ints [0]
// CHECK-NEXT: rt.output
// SMALL-LABEL: rt.program @train_step mesh [dp = 2]
// SMALL: rt.kernel all_reduce(%[[A:.*]]) -> (%[[A]]) ints [0]
// SMALL-NEXT: %[[B:.*]] = rt.alloc
// SMALL-NEXT: rt.kernel silu(%{{.*}}) -> (%[[B]])
// SMALL-NEXT: %[[C:.*]] = rt.alloc
// SMALL-NEXT: rt.kernel silu(%{{.*}}) -> (%[[C]])
// SMALL-NEXT: rt.kernel all_reduce(%[[B]]) -> (%[[B]]) ints [0]
// SMALL-NEXT: rt.kernel all_reduce(%[[C]]) -> (%[[C]]) ints [0]
// OFF-LABEL: rt.program @train_step mesh [dp = 2]
// OFF: rt.kernel all_reduce(%[[A:.*]]) -> (%[[A]]) ints [0]
// OFF-NEXT: %[[B:.*]] = rt.alloc
// OFF-NEXT: rt.kernel silu(%{{.*}}) -> (%[[B]])
// OFF-NEXT: rt.kernel all_reduce(%[[B]]) -> (%[[B]]) ints [0]
rt.program @train_step mesh [dp = 2] {
  %x = rt.input "x" : memref<16xf32>
  %a = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
  rt.kernel all_reduce(%a) -> (%a) ints [0] : memref<16xf32> -> memref<16xf32>
  %b = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%b) : memref<16xf32> -> memref<16xf32>
  rt.kernel all_reduce(%b) -> (%b) ints [0] : memref<16xf32> -> memref<16xf32>
  %c = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%c) : memref<16xf32> -> memref<16xf32>
  rt.kernel all_reduce(%c) -> (%c) ints [0] : memref<16xf32> -> memref<16xf32>
  rt.output "a" %a : memref<16xf32>
  rt.output "b" %b : memref<16xf32>
  rt.output "c" %c : memref<16xf32>
}

// -----

// Stays: a reduction whose result a kernel reads before the next reduction
// (a loss sum, read by a kernel); one whose next reduction is over other
// axes (dp, not tp); one whose next reduction is on another pipeline stage. A reduction into a buffer of its own moves with its result read
// only after the run.
// CHECK-LABEL: rt.program @train_step mesh [dp = 2, pp = 2, tp = 2]
// CHECK: rt.kernel all_reduce(%[[L:.*]]) -> (%[[L]]) ints [0] {stage = 0
// CHECK-NEXT: %[[M:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[L]]) -> (%[[M]])
// CHECK: rt.kernel all_reduce(%[[T:.*]]) -> (%[[T]]) ints [2] {stage = 0
// CHECK-NEXT: %[[P:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[T]]) -> (%[[P]]) {stage = 0
// CHECK-NEXT: rt.kernel all_reduce(%[[P]]) -> (%[[P]]) ints [0] {stage = 0
// CHECK-NEXT: %[[Q:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[P]]) -> (%[[Q]]) {stage = 1
// CHECK-NEXT: %[[RQ:.*]] = rt.alloc
// CHECK-NEXT: %[[S:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[P]]) -> (%[[S]]) {stage = 1
// CHECK-NEXT: rt.kernel all_reduce(%[[Q]]) -> (%[[RQ]]) ints [0] {stage = 1
// CHECK-NEXT: rt.kernel all_reduce(%[[S]]) -> (%[[S]]) ints [0] {stage = 1
// CHECK-NEXT: %[[U:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel add(%[[RQ]], %[[S]]) -> (%[[U]]) {stage = 1
rt.program @train_step mesh [dp = 2, pp = 2, tp = 2] {
  %x = rt.input "x" : memref<16xf32>
  %l = rt.alloc : memref<f32>
  rt.kernel sum_squares(%x) -> (%l) {stage = 0 : ui32} : memref<16xf32> -> memref<f32>
  rt.kernel all_reduce(%l) -> (%l) ints [0] {stage = 0 : ui32} : memref<f32> -> memref<f32>
  %m = rt.alloc : memref<f32>
  rt.kernel silu(%l) -> (%m) {stage = 0 : ui32} : memref<f32> -> memref<f32>
  %t = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%t) {stage = 0 : ui32} : memref<16xf32> -> memref<16xf32>
  rt.kernel all_reduce(%t) -> (%t) ints [2] {stage = 0 : ui32} : memref<16xf32> -> memref<16xf32>
  %p = rt.alloc : memref<16xf32>
  rt.kernel silu(%t) -> (%p) {stage = 0 : ui32} : memref<16xf32> -> memref<16xf32>
  rt.kernel all_reduce(%p) -> (%p) ints [0] {stage = 0 : ui32} : memref<16xf32> -> memref<16xf32>
  %q = rt.alloc : memref<16xf32>
  rt.kernel silu(%p) -> (%q) {stage = 1 : ui32} : memref<16xf32> -> memref<16xf32>
  %rq = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%q) -> (%rq) ints [0] {stage = 1 : ui32} : memref<16xf32> -> memref<16xf32>
  %s = rt.alloc : memref<16xf32>
  rt.kernel silu(%p) -> (%s) {stage = 1 : ui32} : memref<16xf32> -> memref<16xf32>
  rt.kernel all_reduce(%s) -> (%s) ints [0] {stage = 1 : ui32} : memref<16xf32> -> memref<16xf32>
  %u = rt.alloc : memref<16xf32>
  rt.kernel add(%rq, %s) -> (%u) {stage = 1 : ui32} : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  rt.output "u" %u : memref<16xf32>
  rt.output "m" %m : memref<f32>
}
