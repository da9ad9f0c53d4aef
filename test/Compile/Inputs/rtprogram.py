"""Reads an rt program as tpc-compile --emit mlir prints it, for the check
scripts beside this file: its kernels (name, operands, results, each
buffer's bytes, ints), its buffers' arena offsets, pools, functions, action
list and mesh."""
import re

SIZES = {"f32": 4, "bf16": 2, "f16": 2, "i64": 8, "i32": 4, "i8": 1, "i1": 1}


def memref_bytes(t):
    parts = t.split("x")
    n = 1
    for p in parts[:-1]:
        n *= int(p)
    return n * SIZES[parts[-1]]


class Kernel:
    def __init__(self, name, ins, outs, sizes, elements, shapes, ints):
        self.name, self.ins, self.outs = name, ins, outs
        # Each buffer's bytes, element type and dimensions.
        self.sizes, self.elements, self.ints = sizes, elements, ints
        self.shapes = shapes

    def bytes_moved(self):
        """The bytes the kernel reads and writes: its operands' and
        results', but for embedding_grad_accumulate, which reads dY and the
        ids and reads and writes only the table rows an id hits (at most
        one per id), and embedding, which reads the ids and those rows and
        writes its result."""
        def rows_hit(table, ids):
            n = 1
            for d in self.shapes[ids]:
                n *= d
            row = self.sizes[table] // self.shapes[table][0]
            return min(self.sizes[table], n * row)
        if self.name == "embedding":
            table, ids = self.ins
            return (self.sizes[ids] + self.sizes[self.outs[0]] +
                    rows_hit(table, ids))
        if self.name == "embedding_grad_accumulate":
            dy, ids, table = self.ins
            return (self.sizes[dy] + self.sizes[ids] +
                    2 * rows_hit(table, ids))
        return sum(self.sizes[v] for v in self.ins + self.outs)


class Program:
    def __init__(self, path):
        self.kernels = []
        # Buffer -> (arena offset, pool or None, microbatch copies).
        self.offsets, self.pools, self.copies = {}, {}, {}
        self.functions, self.actions, self.stages = [], None, False
        self.mesh, self.pool_slots = {}, []
        # Buffers an output, gradient or other binding names.
        self.bound = set()
        for line in open(path):
            if "rt.program" in line:
                self.read_program(line)
            m = re.match(r"\s*(%\w+) = rt\.(alloc|param|state|input)\b(.*)",
                         line)
            if m:
                self.read_buffer(m.group(1), m.group(3))
            m = re.match(r"\s*rt\.kernel (\w+)\(([^)]*)\) -> \(([^)]*)\)",
                         line)
            if m:
                self.read_kernel(m, line)
            m = re.match(r'\s*rt\.\w+ "[^"]*" (%\w+)', line)
            if m:
                self.bound.add(m.group(1))

    def read_program(self, line):
        self.functions = [(int(f), int(c)) for c, f in re.findall(
            r"\{count = (\d+) : i64, first = (\d+) : i64", line)]
        m = re.search(r"\bactions = array<i64: ([^>]*)>", line)
        if m:
            values = [int(v) for v in m.group(1).split(",")]
            # (function, microbatch, slot)
            self.actions = list(zip(values[0::3], values[1::3],
                                    values[2::3]))
        self.stages = "stage_actions" in line
        m = re.search(r"mesh \[([^\]]*)\]", line)
        if m:
            for axis in m.group(1).split(","):
                name, size = axis.split("=")
                self.mesh[name.strip()] = int(size)
        for slots, stride in re.findall(
                r"\{slots = (\d+) : i64(?:, stride = (\d+) : i64)?\}", line):
            self.pool_slots.append((int(slots), int(stride or 0)))

    def read_buffer(self, value, rest):
        m = re.search(r"\boffset (\d+)", rest)
        if m:
            self.offsets[value] = int(m.group(1))
        m = re.search(r"\bpool (\d+)", rest)
        if m:
            self.pools[value] = int(m.group(1))
        m = re.search(r"\bmicrobatches (\d+)", rest)
        if m:
            self.copies[value] = int(m.group(1))

    def read_kernel(self, m, line):
        ins = [v.strip() for v in m.group(2).split(",") if v.strip()]
        outs = [v.strip() for v in m.group(3).split(",") if v.strip()]
        sig = line.rsplit(" : ", 1)[1]
        tin, tout = sig.split(" -> ")
        types = re.findall(r"memref<([^>]*)>", tin) + re.findall(
            r"memref<([^>]*)>", tout)
        sizes, elements, shapes = {}, {}, {}
        for v, t in zip(ins + outs, types):
            sizes[v] = memref_bytes(t) if t else 4
            elements[v] = t.split("x")[-1]
            shapes[v] = [int(d) for d in t.split("x")[:-1]]
        ints = re.search(r"\bints \[([^\]]*)\]", line)
        ints = [int(v) for v in ints.group(1).split(",")] if ints else []
        self.kernels.append(Kernel(m.group(1), ins, outs, sizes, elements,
                                   shapes, ints))

    def skipped(self, k):
        """Whether the devices skip kernel k: a copy onto its own bytes (the
        memory plan hands a reshape's operand over to its result)."""
        kernel = self.kernels[k]
        if kernel.name not in ("copy", "test_copy", "cast"):
            return False
        a, b = kernel.ins[0], kernel.outs[0]
        return (kernel.elements[a] == kernel.elements[b]
                and a in self.offsets and b in self.offsets
                and self.offsets[a] == self.offsets[b]
                and self.pools.get(a) == self.pools.get(b)
                and kernel.sizes[a] == kernel.sizes[b])

    def runs(self, k):
        """How often kernel k runs in a step (one stage)."""
        if self.actions is None:
            return 1
        return sum(1 for f, _, _ in self.actions
                   if self.functions[f][0] <= k <
                   self.functions[f][0] + self.functions[f][1])

    def step_kernels(self):
        """(kernel index, action slot) in the order a step runs them (one
        stage)."""
        if self.actions is None:
            return [(k, 0) for k in range(len(self.kernels))]
        order = []
        for f, _, slot in self.actions:
            first, count = self.functions[f]
            order += [(k, slot) for k in range(first, first + count)]
        return order

    def group_bytes(self, group):
        """The bytes a fused group (kernel indices, head first) moves: each
        outside buffer once. An intermediate a later member reads is never
        written, but for a linear whose gelu writes elsewhere (the aux) and
        a result that a kernel outside the group reads or a binding
        names."""
        head = self.kernels[group[0]]
        head_written = (head.name == "linear" and
                        self.kernels[group[1]].name == "gelu" and
                        self.offsets.get(head.outs[0]) !=
                        self.offsets.get(self.kernels[group[1]].outs[0]))
        later = set()
        for k in group[1:]:
            later |= set(self.kernels[k].ins)
        # Read by a kernel outside the group, or bound: written all the same.
        outside_reads = set(self.bound)
        for k, kernel in enumerate(self.kernels):
            if k not in group:
                outside_reads |= set(kernel.ins)
        outside = 0
        written, counted = set(), set()
        for i, k in enumerate(group):
            kernel = self.kernels[k]
            for v in kernel.ins:
                if v not in written and v not in counted:
                    counted.add(v)
                    outside += kernel.sizes[v]
            for v in kernel.outs:
                written.add(v)
                intermediate = (i + 1 < len(group) and v in later
                                and not head_written
                                and v not in outside_reads)
                if not intermediate and v not in counted:
                    counted.add(v)
                    outside += kernel.sizes[v]
        return outside

    # sum_squares' partial sums per operand on the CUDA device
    # (runtime/cuda/KernelBatches.h kSquaresPartialBlocks doubles).
    SQUARES_PARTIAL_BYTES = 128 * 8

    def squares_after_updates(self, k):
        """Whether kernel k is a sum_squares right after a run of two or
        more adamw_updates whose gradients (operand 1) hold each of its
        operands once: the sum_squares an optimizer batch of the CUDA
        device sums in its pass (it then adds the partial sums alone)."""
        kernel = self.kernels[k]
        if kernel.name != "sum_squares":
            return False
        grads = []
        j = k - 1
        while j >= 0 and self.kernels[j].name == "adamw_update":
            grads.append(self.kernels[j].ins[1])
            j -= 1
        return (len(grads) >= 2 and
                all(grads.count(v) == 1 for v in kernel.ins) and
                all(kernel.elements[v] == "f32" for v in kernel.ins))

    def squares_bytes(self, k):
        """The bytes such a sum_squares moves: its partial sums and its
        result."""
        kernel = self.kernels[k]
        return (len(kernel.ins) * self.SQUARES_PARTIAL_BYTES +
                kernel.sizes[kernel.outs[0]])
