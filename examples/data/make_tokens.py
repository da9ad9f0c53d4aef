#!/usr/bin/env python3
"""Makes the byte-level token files the examples and tests train on.

A vocabulary of 256 (one token per byte, as the tiny example configs have)
needs no tokenizer. The text is tpc's own documentation as of when the files
were made (corpus.txt, committed with them), so nothing is downloaded. Writes
train.bin (the first 90%) and val.bin (the rest) as flat little-endian uint16
token ids, the format nanoGPT's prepare scripts write and `tpc-run --data`
reads.

    python3 examples/data/make_tokens.py examples/data/corpus.txt examples/data
"""

import array
import sys


def main():
    source, out_dir = sys.argv[1], sys.argv[2]
    data = open(source, "rb").read()
    split = len(data) * 9 // 10
    for name, chunk in (("train.bin", data[:split]), ("val.bin", data[split:])):
        tokens = array.array("H", list(chunk))  # one uint16 token per byte
        if sys.byteorder != "little":
            tokens.byteswap()
        with open(out_dir + "/" + name, "wb") as f:
            tokens.tofile(f)
        print("%s: %d tokens" % (name, len(tokens)))


if __name__ == "__main__":
    main()
