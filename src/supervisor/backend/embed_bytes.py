#!/usr/bin/env python3
"""embed_bytes.py IN OUT_C OUT_H NAME - writes IN's bytes as a C array NAME
(and NAME_len) so a binary carries a compiled BPF object without bpftool."""
import sys


def main():
    src, out_c, out_h, name = sys.argv[1:5]
    data = open(src, "rb").read()
    rows = [", ".join(f"0x{b:02x}" for b in data[i:i + 12]) for i in range(0, len(data), 12)]
    header = name.upper() + "_H"
    with open(out_h, "w") as h:
        h.write(f"/* generated from {src.rsplit('/', 1)[-1]} by embed_bytes.py */\n"
                f"#ifndef {header}\n#define {header}\n#include <stddef.h>\n"
                f"extern const unsigned char {name}[];\nextern const size_t {name}_len;\n"
                f"#endif\n")
    with open(out_c, "w") as c:
        c.write(f"/* generated from {src.rsplit('/', 1)[-1]} by embed_bytes.py */\n"
                f"#include \"{out_h.rsplit('/', 1)[-1]}\"\n"
                f"const unsigned char {name}[] = {{\n\t" + ",\n\t".join(rows) + "\n};\n"
                f"const size_t {name}_len = {len(data)};\n")


if __name__ == "__main__":
    main()
