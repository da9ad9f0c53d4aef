// rt-plan-memory=check-only finds what is wrong with a plan in the IR.
// RUN: tpc-opt %s --split-input-file --rt-plan-memory=check-only \
// RUN:   -verify-diagnostics -o /dev/null

// A right plan passes.
module attributes {rt.arena_bytes = 192 : i64, rt.planned_peak_bytes = 128 : i64} {
  rt.program @valid {
    %x = rt.input "x" offset 0 : memref<16xf32>
    %a = rt.alloc offset 64 : memref<16xf32>
    rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
    // a is dead: b may reuse its bytes.
    %b = rt.alloc offset 64 : memref<16xf32>
    rt.kernel silu(%x) -> (%b) : memref<16xf32> -> memref<16xf32>
    rt.output "b" %b : memref<16xf32>
  }
}

// -----

module attributes {rt.arena_bytes = 192 : i64} {
  rt.program @overlap {
    %x = rt.input "x" offset 0 : memref<16xf32>
    // expected-note @+1 {{the other buffer}}
    %a = rt.alloc offset 64 : memref<16xf32>
    rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
    // a is read by the next kernel, which writes b over it.
    // expected-error @+1 {{rt-plan-memory: bytes [64, 128) overlap bytes [64, 128) of a buffer live at the same time}}
    %b = rt.alloc offset 64 : memref<16xf32>
    rt.kernel silu(%a) -> (%b) : memref<16xf32> -> memref<16xf32>
    rt.output "b" %b : memref<16xf32>
  }
}

// -----

// An output is live to the end: c must not take its bytes.
module attributes {rt.arena_bytes = 256 : i64} {
  rt.program @output {
    %x = rt.input "x" offset 0 : memref<16xf32>
    // expected-note @+1 {{the other buffer}}
    %a = rt.alloc offset 64 : memref<16xf32>
    rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
    %b = rt.alloc offset 128 : memref<16xf32>
    rt.kernel silu(%x) -> (%b) : memref<16xf32> -> memref<16xf32>
    // expected-error @+1 {{rt-plan-memory: bytes [64, 128) overlap bytes [64, 128)}}
    %c = rt.alloc offset 64 : memref<16xf32>
    rt.kernel silu(%b) -> (%c) : memref<16xf32> -> memref<16xf32>
    rt.output "a" %a : memref<16xf32>
    rt.output "c" %c : memref<16xf32>
  }
}

// -----

// Params live throughout.
module attributes {rt.arena_bytes = 256 : i64} {
  rt.program @param {
    // expected-note @+1 {{the other buffer}}
    %w = rt.param "w" hf_shape [16] init normal offset 0 : memref<16xf32>
    %x = rt.input "x" offset 64 : memref<16xf32>
    %a = rt.alloc offset 128 : memref<16xf32>
    rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
    // expected-error @+1 {{bytes [0, 64) overlap bytes [0, 64)}}
    %b = rt.alloc offset 0 : memref<16xf32>
    rt.kernel add(%a, %w) -> (%b) : memref<16xf32>, memref<16xf32> -> memref<16xf32>
    rt.output "b" %b : memref<16xf32>
  }
}

// -----

module attributes {rt.arena_bytes = 100 : i64} {
  rt.program @outside {
    %x = rt.input "x" offset 0 : memref<16xf32>
    // expected-error @+1 {{rt-plan-memory: buffer at offset 64 (64 bytes) is misaligned or outside the arena of 100 bytes}}
    %a = rt.alloc offset 64 : memref<16xf32>
    rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
    rt.output "a" %a : memref<16xf32>
  }
}

// -----

module attributes {rt.arena_bytes = 256 : i64} {
  rt.program @misaligned {
    // expected-error @+1 {{rt-plan-memory: buffer at offset 4 (64 bytes) is misaligned}}
    %x = rt.input "x" offset 4 : memref<16xf32>
  }
}

// -----

// expected-error @+1 {{rt-plan-memory: 'rt.planned_peak_bytes' is 64 but the buffers live at one kernel add up to at most 128}}
module attributes {rt.arena_bytes = 192 : i64, rt.planned_peak_bytes = 64 : i64} {
  rt.program @peak {
    %x = rt.input "x" offset 0 : memref<16xf32>
    %a = rt.alloc offset 64 : memref<16xf32>
    rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
    rt.output "a" %a : memref<16xf32>
  }
}

// -----

// expected-error @+1 {{rt-plan-memory: check-only needs 'rt.arena_bytes' on the module}}
module {
  rt.program @no_arena {
    %x = rt.input "x" offset 0 : memref<16xf32>
  }
}

// -----

module attributes {rt.arena_bytes = 64 : i64} {
  rt.program @no_offset {
    // expected-error @+1 {{rt-plan-memory: check-only needs an offset on every buffer}}
    %x = rt.input "x" : memref<16xf32>
  }
}

// -----

// expected-error @+1 {{rt-plan-memory: expected exactly one rt.program, found 2}}
module {
  rt.program @one {
  }
  rt.program @two {
  }
}

// -----

// A copy may write the very bytes of its operand when the operand dies at
// it (b on a), not while the operand is read later (d on c).
module attributes {rt.arena_bytes = 256 : i64, rt.planned_peak_bytes = 256 : i64} {
  rt.program @copy_on_its_operand {
    %x = rt.input "x" offset 0 : memref<16xf32>
    %a = rt.alloc offset 64 : memref<16xf32>
    rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
    %b = rt.alloc offset 64 : memref<4x4xf32>
    rt.kernel copy(%a) -> (%b) : memref<16xf32> -> memref<4x4xf32>
    // expected-note @below {{the other buffer}}
    %c = rt.alloc offset 128 : memref<4x4xf32>
    rt.kernel silu(%b) -> (%c) : memref<4x4xf32> -> memref<4x4xf32>
    // expected-error @below {{rt-plan-memory: bytes [128, 192) overlap bytes [128, 192) of a buffer live at the same time}}
    %d = rt.alloc offset 128 : memref<16xf32>
    rt.kernel copy(%c) -> (%d) : memref<4x4xf32> -> memref<16xf32>
    %e = rt.alloc offset 192 : memref<4x4xf32>
    rt.kernel add(%c, %c) -> (%e) : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
    rt.output "d" %d : memref<16xf32>
    rt.output "e" %e : memref<4x4xf32>
  }
}
