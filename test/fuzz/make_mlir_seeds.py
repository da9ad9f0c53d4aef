#!/usr/bin/env python3
"""Writes MLIR seeds for tpc-fuzz-mlir from the lit tests of the dialects.

Each test file is cut at its `// -----` markers (-split-input-file); comment
lines (RUN, CHECK, expected-error) are dropped. The chunks go to OUT (one file
each, named after the test and the chunk's index); test/fuzz/README.md says
how they were thinned to the committed corpus (libFuzzer -merge).

    make_mlir_seeds.py OUT [TEST.mlir...]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT = sorted(
    list((ROOT / "test/Dialect").glob("*/*.mlir"))
    + list((ROOT / "test/Rt").glob("*.mlir"))
    + list((ROOT / "test/Dist").glob("*.mlir"))
    + list((ROOT / "test/Conversion").glob("*/*.mlir")))


def chunks(text):
    for chunk in re.split(r"^// -----.*$", text, flags=re.M):
        lines = [line for line in chunk.splitlines()
                 if not line.lstrip().startswith("//")]
        body = "\n".join(lines).strip()
        if body:
            yield body + "\n"


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    tests = [pathlib.Path(p) for p in sys.argv[2:]] or DEFAULT
    seen = set()
    for test in tests:
        rel = test.resolve().relative_to(ROOT / "test")
        stem = "-".join(rel.with_suffix("").parts).lower()
        for index, body in enumerate(chunks(test.read_text())):
            if body in seen:
                continue
            seen.add(body)
            (out / f"{stem}-{index:03d}.mlir").write_text(body)
    print(f"{len(seen)} seeds in {out}")


if __name__ == "__main__":
    main()
