// rt-accumulate-weight-grads: a linear_weight_grad whose share only an
// accumulating add reads becomes a linear_weight_grad_accumulate into the
// sum, where the GEMM was; the share's buffer and the add go. Shares read
// elsewhere, bound, of another type, or whose sum is touched in between
// stay as they are.
// RUN: tpc-opt %s --split-input-file --rt-accumulate-weight-grads | FileCheck %s

// Two microbatches' shares (bf16 activations, f32 sums; the second with an
// out_in weight) summed by adds: each pair becomes one accumulating GEMM.
// CHECK-LABEL: rt.program @train_step
// CHECK: %[[SUM:.*]] = rt.alloc : memref<8x16xf32>
// CHECK-NEXT: rt.kernel zeros() -> (%[[SUM]])
// CHECK-NEXT: %[[SUM2:.*]] = rt.alloc : memref<16x8xf32>
// CHECK-NEXT: rt.kernel zeros() -> (%[[SUM2]])
// CHECK-NEXT: rt.kernel linear_weight_grad_accumulate(%[[X:.*]], %[[DY:.*]], %[[SUM]]) -> (%[[SUM]]) : memref<2x4x8xbf16>, memref<2x4x16xbf16>, memref<8x16xf32> -> memref<8x16xf32>
// CHECK-NEXT: rt.kernel linear_weight_grad_accumulate(%[[X]], %[[DY]], %[[SUM2]]) -> (%[[SUM2]]) flags 1 {phase = "W"} : memref<2x4x8xbf16>, memref<2x4x16xbf16>, memref<16x8xf32> -> memref<16x8xf32>
// CHECK-NEXT: rt.kernel linear_weight_grad_accumulate(%[[X]], %[[DY]], %[[SUM]]) -> (%[[SUM]])
// CHECK-NOT: rt.kernel add
// CHECK-NOT: rt.kernel linear_weight_grad(
// CHECK: rt.output "w" %[[SUM]]
rt.program @train_step {
  %x = rt.input "x" : memref<2x4x8xbf16>
  %dy = rt.input "dy" : memref<2x4x16xbf16>
  %sum = rt.alloc : memref<8x16xf32>
  rt.kernel zeros() -> (%sum) : -> memref<8x16xf32>
  %sum2 = rt.alloc : memref<16x8xf32>
  rt.kernel zeros() -> (%sum2) : -> memref<16x8xf32>
  %s0 = rt.alloc : memref<8x16xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%s0) : memref<2x4x8xbf16>, memref<2x4x16xbf16> -> memref<8x16xf32>
  rt.kernel add(%sum, %s0) -> (%sum) : memref<8x16xf32>, memref<8x16xf32> -> memref<8x16xf32>
  %t0 = rt.alloc : memref<16x8xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%t0) flags 1 {phase = "W"} : memref<2x4x8xbf16>, memref<2x4x16xbf16> -> memref<16x8xf32>
  rt.kernel add(%sum2, %t0) -> (%sum2) : memref<16x8xf32>, memref<16x8xf32> -> memref<16x8xf32>
  %s1 = rt.alloc : memref<8x16xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%s1) : memref<2x4x8xbf16>, memref<2x4x16xbf16> -> memref<8x16xf32>
  rt.kernel add(%sum, %s1) -> (%sum) : memref<8x16xf32>, memref<8x16xf32> -> memref<8x16xf32>
  rt.output "w" %sum : memref<8x16xf32>
  rt.output "w2" %sum2 : memref<16x8xf32>
}

// -----

// Not folded: a share also read by another kernel; a share bound as an
// output; a bf16 sum; a sum read between the GEMM and the add; an add into a
// buffer of its own whose other operand is bound (read later).
// CHECK-LABEL: rt.program @train_step
// CHECK-NOT: linear_weight_grad_accumulate
rt.program @train_step {
  %x = rt.input "x" : memref<4x8xf32>
  %dy = rt.input "dy" : memref<4x16xf32>
  %sum = rt.alloc : memref<8x16xf32>
  rt.kernel zeros() -> (%sum) : -> memref<8x16xf32>
  %read = rt.alloc : memref<8x16xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%read) : memref<4x8xf32>, memref<4x16xf32> -> memref<8x16xf32>
  rt.kernel add(%sum, %read) -> (%sum) : memref<8x16xf32>, memref<8x16xf32> -> memref<8x16xf32>
  %copy = rt.alloc : memref<8x16xf32>
  rt.kernel copy(%read) -> (%copy) : memref<8x16xf32> -> memref<8x16xf32>
  %bound = rt.alloc : memref<8x16xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%bound) : memref<4x8xf32>, memref<4x16xf32> -> memref<8x16xf32>
  rt.kernel add(%sum, %bound) -> (%sum) : memref<8x16xf32>, memref<8x16xf32> -> memref<8x16xf32>
  %x16 = rt.input "x16" : memref<4x8xbf16>
  %dy16 = rt.input "dy16" : memref<4x16xbf16>
  %sum16 = rt.alloc : memref<8x16xbf16>
  rt.kernel zeros() -> (%sum16) : -> memref<8x16xbf16>
  %s16 = rt.alloc : memref<8x16xbf16>
  rt.kernel linear_weight_grad(%x16, %dy16) -> (%s16) : memref<4x8xbf16>, memref<4x16xbf16> -> memref<8x16xbf16>
  rt.kernel add(%sum16, %s16) -> (%sum16) : memref<8x16xbf16>, memref<8x16xbf16> -> memref<8x16xbf16>
  %between = rt.alloc : memref<8x16xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%between) : memref<4x8xf32>, memref<4x16xf32> -> memref<8x16xf32>
  %peek = rt.alloc : memref<8x16xf32>
  rt.kernel copy(%sum) -> (%peek) : memref<8x16xf32> -> memref<8x16xf32>
  rt.kernel add(%sum, %between) -> (%sum) : memref<8x16xf32>, memref<8x16xf32> -> memref<8x16xf32>
  %fresh = rt.alloc : memref<8x16xf32>
  %plain = rt.alloc : memref<8x16xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%plain) : memref<4x8xf32>, memref<4x16xf32> -> memref<8x16xf32>
  rt.kernel add(%peek, %plain) -> (%fresh) : memref<8x16xf32>, memref<8x16xf32> -> memref<8x16xf32>
  rt.output "w" %sum : memref<8x16xf32>
  rt.output "copy" %copy : memref<8x16xf32>
  rt.output "bound" %bound : memref<8x16xf32>
  rt.output "w16" %sum16 : memref<8x16xbf16>
  rt.output "fresh" %fresh : memref<8x16xf32>
  rt.output "peek" %peek : memref<8x16xf32>
}

// -----

// An embedding_grad's share summed by an add becomes embedding_grad_accumulate
// into the sum (only the rows the ids hit are read and written).
// CHECK-LABEL: rt.program @train_step
// CHECK: %[[ESUM:.*]] = rt.alloc : memref<50x8xf32>
// CHECK-NEXT: rt.kernel zeros() -> (%[[ESUM]])
// CHECK-NEXT: rt.kernel embedding_grad_accumulate(%[[EDY:.*]], %[[IDS:.*]], %[[ESUM]]) -> (%[[ESUM]]) : memref<2x4x8xbf16>, memref<2x4xi64>, memref<50x8xf32> -> memref<50x8xf32>
// CHECK-NEXT: rt.kernel embedding_grad_accumulate(%[[EDY]], %[[IDS]], %[[ESUM]]) -> (%[[ESUM]])
// CHECK-NOT: rt.kernel add
// CHECK-NOT: rt.kernel embedding_grad(
// CHECK: rt.output "e" %[[ESUM]]
rt.program @train_step {
  %dy = rt.input "dy" : memref<2x4x8xbf16>
  %ids = rt.input "ids" bound 50 : memref<2x4xi64>
  %sum = rt.alloc : memref<50x8xf32>
  rt.kernel zeros() -> (%sum) : -> memref<50x8xf32>
  %s0 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%s0) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  rt.kernel add(%sum, %s0) -> (%sum) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  %s1 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%s1) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  rt.kernel add(%sum, %s1) -> (%sum) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  rt.output "e" %sum : memref<50x8xf32>
}

// -----

// A tied embedding: the head's share plus the embedding's into a buffer of
// their own, then added into the microbatches' sum. The scatter adds into
// the head's share, which takes the add's result's place; then both the
// head's GEMM and the scatter add into the sum: ((sum + head) + rows), where
// the adds computed sum + (head + rows).
// CHECK-LABEL: rt.program @train_step
// CHECK: %[[TSUM:.*]] = rt.alloc : memref<50x8xf32>
// CHECK-NEXT: rt.kernel zeros() -> (%[[TSUM]])
// CHECK-NEXT: rt.kernel linear_weight_grad_accumulate(%{{.*}}, %{{.*}}, %[[TSUM]]) -> (%[[TSUM]])
// CHECK-NEXT: rt.kernel embedding_grad_accumulate(%{{.*}}, %{{.*}}, %[[TSUM]]) -> (%[[TSUM]]) {phase = "B"} : memref<2x4x8xbf16>, memref<2x4xi64>, memref<50x8xf32> -> memref<50x8xf32>
// CHECK-NEXT: rt.output "tied" %[[TSUM]]
rt.program @train_step {
  %x = rt.input "x" : memref<2x4x50xbf16>
  %dy = rt.input "dy" : memref<2x4x8xbf16>
  %ids = rt.input "ids" bound 50 : memref<2x4xi64>
  %sum = rt.alloc : memref<50x8xf32>
  rt.kernel zeros() -> (%sum) : -> memref<50x8xf32>
  %head = rt.alloc : memref<50x8xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%head) : memref<2x4x50xbf16>, memref<2x4x8xbf16> -> memref<50x8xf32>
  %share = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%share) {phase = "B"} : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %tied = rt.alloc : memref<50x8xf32>
  rt.kernel add(%share, %head) -> (%tied) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  rt.kernel add(%sum, %tied) -> (%sum) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  rt.output "tied" %sum : memref<50x8xf32>
}

// -----

// One microbatch: the tied sum is the gradient itself, bound and read.
// CHECK-LABEL: rt.program @train_step
// CHECK: %[[HEAD1:.*]] = rt.alloc : memref<50x8xf32>
// CHECK-NEXT: rt.kernel linear_weight_grad(%{{.*}}, %{{.*}}) -> (%[[HEAD1]])
// CHECK-NEXT: rt.kernel embedding_grad_accumulate(%{{.*}}, %{{.*}}, %[[HEAD1]]) -> (%[[HEAD1]])
// CHECK-NEXT: %[[SQ:.*]] = rt.alloc : memref<f32>
// CHECK-NEXT: rt.kernel sum_squares(%[[HEAD1]]) -> (%[[SQ]])
// CHECK-NEXT: rt.grad "w" %[[HEAD1]]
rt.program @train_step {
  %w = rt.param "w" hf_shape [50, 8] init normal : memref<50x8xf32>
  %x = rt.input "x" : memref<2x4x50xbf16>
  %dy = rt.input "dy" : memref<2x4x8xbf16>
  %ids = rt.input "ids" bound 50 : memref<2x4xi64>
  %head = rt.alloc : memref<50x8xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%head) : memref<2x4x50xbf16>, memref<2x4x8xbf16> -> memref<50x8xf32>
  %share = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%share) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %tied = rt.alloc : memref<50x8xf32>
  rt.kernel add(%head, %share) -> (%tied) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  %sq = rt.alloc : memref<f32>
  rt.kernel sum_squares(%tied) -> (%sq) : memref<50x8xf32> -> memref<f32>
  rt.grad "w" %tied : memref<50x8xf32>
  rt.output "sq" %sq : memref<f32>
}

// -----

// Unrolled microbatches' running sum, each into a buffer of its own: the
// first share is the sum, the others' scatters add into it in turn.
// CHECK-LABEL: rt.program @train_step
// CHECK: %[[T0:.*]] = rt.alloc : memref<50x8xf32>
// CHECK-NEXT: rt.kernel embedding_grad(%[[CDY:.*]], %[[CIDS:.*]]) -> (%[[T0]])
// CHECK-NEXT: rt.kernel embedding_grad_accumulate(%[[CDY]], %[[CIDS]], %[[T0]]) -> (%[[T0]])
// CHECK-NEXT: rt.kernel embedding_grad_accumulate(%[[CDY]], %[[CIDS]], %[[T0]]) -> (%[[T0]])
// CHECK-NEXT: rt.output "e" %[[T0]]
rt.program @train_step {
  %dy = rt.input "dy" : memref<2x4x8xbf16>
  %ids = rt.input "ids" bound 50 : memref<2x4xi64>
  %t0 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%t0) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %s1 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%s1) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %t1 = rt.alloc : memref<50x8xf32>
  rt.kernel add(%t0, %s1) -> (%t1) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  %s2 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%s2) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %t2 = rt.alloc : memref<50x8xf32>
  rt.kernel add(%t1, %s2) -> (%t2) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  rt.output "e" %t2 : memref<50x8xf32>
}

// -----

// Not folded: a head share also read elsewhere; one bound as an output; a
// scatter whose share is read twice. A head written after the scatter adds
// into the scatter's share instead (the same sum).
// CHECK-LABEL: rt.program @train_step
// CHECK-NOT: embedding_grad_accumulate
// CHECK: rt.kernel copy(
// CHECK-NEXT: %[[S1:.*]] = rt.alloc : memref<50x8xf32>
// CHECK-NEXT: rt.kernel embedding_grad(%{{.*}}, %{{.*}}) -> (%[[S1]])
// CHECK-NEXT: rt.kernel linear_weight_grad_accumulate(%{{.*}}, %{{.*}}, %[[S1]]) -> (%[[S1]])
// CHECK-NOT: embedding_grad_accumulate
// CHECK: rt.output "t1" %[[S1]]
rt.program @train_step {
  %x = rt.input "x" : memref<2x4x50xbf16>
  %dy = rt.input "dy" : memref<2x4x8xbf16>
  %ids = rt.input "ids" bound 50 : memref<2x4xi64>
  %read = rt.alloc : memref<50x8xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%read) : memref<2x4x50xbf16>, memref<2x4x8xbf16> -> memref<50x8xf32>
  %s0 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%s0) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %t0 = rt.alloc : memref<50x8xf32>
  rt.kernel add(%read, %s0) -> (%t0) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  %copy = rt.alloc : memref<50x8xf32>
  rt.kernel copy(%read) -> (%copy) : memref<50x8xf32> -> memref<50x8xf32>
  %s1 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%s1) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %late = rt.alloc : memref<50x8xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%late) : memref<2x4x50xbf16>, memref<2x4x8xbf16> -> memref<50x8xf32>
  %t1 = rt.alloc : memref<50x8xf32>
  rt.kernel add(%late, %s1) -> (%t1) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  %bound = rt.alloc : memref<50x8xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%bound) : memref<2x4x50xbf16>, memref<2x4x8xbf16> -> memref<50x8xf32>
  %s2 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%s2) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %t2 = rt.alloc : memref<50x8xf32>
  rt.kernel add(%bound, %s2) -> (%t2) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  %h3 = rt.alloc : memref<50x8xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%h3) : memref<2x4x50xbf16>, memref<2x4x8xbf16> -> memref<50x8xf32>
  %s3 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%s3) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %t3 = rt.alloc : memref<50x8xf32>
  rt.kernel add(%h3, %s3) -> (%t3) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  %peek = rt.alloc : memref<50x8xf32>
  rt.kernel copy(%s3) -> (%peek) : memref<50x8xf32> -> memref<50x8xf32>
  rt.output "t0" %t0 : memref<50x8xf32>
  rt.output "copy" %copy : memref<50x8xf32>
  rt.output "t1" %t1 : memref<50x8xf32>
  rt.output "bound" %bound : memref<50x8xf32>
  rt.output "t2" %t2 : memref<50x8xf32>
  rt.output "t3" %t3 : memref<50x8xf32>
  rt.output "peek" %peek : memref<50x8xf32>
}

// -----

// Unrolled microbatches of a tied table, each sum into a buffer of its own:
// the first microbatch's head share becomes the running sum, into which
// each GEMM and scatter adds in turn, in the order the microbatch functions
// add into a zeroed sum in place (test/Compile/train-actions.test).
// CHECK-LABEL: rt.program @train_step
// CHECK: %[[H0:.*]] = rt.alloc : memref<50x8xf32>
// CHECK-NEXT: rt.kernel linear_weight_grad(%[[UX:.*]], %[[UDY:.*]]) -> (%[[H0]])
// CHECK-NEXT: rt.kernel embedding_grad_accumulate(%[[UDY]], %[[UIDS:.*]], %[[H0]]) -> (%[[H0]])
// CHECK-NEXT: rt.kernel linear_weight_grad_accumulate(%[[UX]], %[[UDY]], %[[H0]]) -> (%[[H0]])
// CHECK-NEXT: rt.kernel embedding_grad_accumulate(%[[UDY]], %[[UIDS]], %[[H0]]) -> (%[[H0]])
// CHECK-NEXT: rt.output "tied" %[[H0]]
rt.program @train_step {
  %x = rt.input "x" : memref<2x4x50xbf16>
  %dy = rt.input "dy" : memref<2x4x8xbf16>
  %ids = rt.input "ids" bound 50 : memref<2x4xi64>
  %h0 = rt.alloc : memref<50x8xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%h0) : memref<2x4x50xbf16>, memref<2x4x8xbf16> -> memref<50x8xf32>
  %e0 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%e0) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %t0 = rt.alloc : memref<50x8xf32>
  rt.kernel add(%h0, %e0) -> (%t0) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  %h1 = rt.alloc : memref<50x8xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%h1) : memref<2x4x50xbf16>, memref<2x4x8xbf16> -> memref<50x8xf32>
  %e1 = rt.alloc : memref<50x8xf32>
  rt.kernel embedding_grad(%dy, %ids) -> (%e1) : memref<2x4x8xbf16>, memref<2x4xi64> -> memref<50x8xf32>
  %u1 = rt.alloc : memref<50x8xf32>
  rt.kernel add(%h1, %e1) -> (%u1) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  %t1 = rt.alloc : memref<50x8xf32>
  rt.kernel add(%t0, %u1) -> (%t1) : memref<50x8xf32>, memref<50x8xf32> -> memref<50x8xf32>
  rt.output "tied" %t1 : memref<50x8xf32>
}

// -----

// Not folded: a running sum into a buffer of its own in another pool than
// the sum's (the sum would take the result's place in every slot).
// CHECK-LABEL: rt.program @pooled
// CHECK-NOT: linear_weight_grad_accumulate
// CHECK: rt.kernel add(
rt.program @pooled attributes {pools = [{slots = 2}]} {
  %x = rt.input "x" : memref<4x8xf32>
  %dy = rt.input "dy" : memref<4x16xf32>
  %t0 = rt.alloc : memref<8x16xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%t0) : memref<4x8xf32>, memref<4x16xf32> -> memref<8x16xf32>
  %s1 = rt.alloc : memref<8x16xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%s1) : memref<4x8xf32>, memref<4x16xf32> -> memref<8x16xf32>
  %t1 = rt.alloc pool 0 : memref<8x16xf32>
  rt.kernel add(%t0, %s1) -> (%t1) : memref<8x16xf32>, memref<8x16xf32> -> memref<8x16xf32>
  %copy = rt.alloc : memref<8x16xf32>
  rt.kernel copy(%t1) -> (%copy) : memref<8x16xf32> -> memref<8x16xf32>
  rt.output "w" %copy : memref<8x16xf32>
}
