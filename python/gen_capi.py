# SPDX-License-Identifier: MIT
"""python/gen_capi.py - writes python/gpuops/_capi.py, the C API as the Python package sees it,
from gpuops.h itself: every public prototype (name, return type, parameters), the public structs and enums
with their values, the algorithm list, the floating-point storage types and the family registries
(GPUOPS__EW_OPS, GPUOPS__SOFTMAX_OPS, ...). The header stays the one place these lists are
written; the package builds its ctypes signatures and its per-family op tables from this file.

It runs the C preprocessor (cc -E; CC names another) on gpuops.h, so it needs a C compiler; the
package itself needs none. `--check` compares the file with what the header gives now and fails
when it is stale (`make test` runs it).

usage: python3 python/gen_capi.py [--check] [--header gpuops.h] [--out python/gpuops/_capi.py]

Adding a family's registry: one line in REGISTRIES below (the macro and the names of its columns;
the columns kept are those named, in that order).
"""
import argparse
import os
import pprint
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# macro -> (its columns, in order, the columns kept). A registry that the header does not define
# (a family not yet merged) is written as an empty tuple.
REGISTRIES = {
    "GPUOPS__EW_OPS": (("OP", "name", "SIG", "INPUTS", "FUSED", "LO", "HI", "CPU"), ("name", "SIG", "INPUTS", "FUSED", "LO", "HI")),
    "GPUOPS__SOFTMAX_OPS": (("OP", "name", "INPUTS"), ("name", "INPUTS")),
    "GPUOPS__NORM_OPS": (("OP", "name", "RMS", "RES", "GELU", "BWD"), ("name", "RMS", "RES", "GELU", "BWD")),
}

# The lists written as X-macros in the header's core: macro -> (columns, kept, extra macro args).
CORE_LISTS = {
    "GPUOPS_ALGO_LIST": (("N", "V", "S"), ("S", "V"), ""),
    "GPUOPS__FLOAT_TYPES": (("S", "T", "D", "C"), ("S",), ", ~"),
}


def preprocess(header, text):
    """The preprocessed text of `text`, compiled in the header's folder (so it can #include it)."""
    cc = os.environ.get("CC", "cc")
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as fh:
        fh.write(text)
        path = fh.name
    try:
        out = subprocess.run([cc, "-E", "-P", "-x", "c", "-I", os.path.dirname(os.path.abspath(header)), path],
                             check=True, capture_output=True, text=True)
    finally:
        os.unlink(path)
    return out.stdout


def parse_params(text):
    """'float *y, const float *x, int64_t n' -> (('float *', 'y'), ('const float *', 'x'), ('int64_t', 'n'))."""
    text = " ".join(text.split())
    if text in ("", "void"):
        return ()
    out = []
    for p in text.split(","):
        p = p.strip()
        m = re.match(r"^(.*?)(\w+)$", p)
        ctype = " ".join(m.group(1).replace("*", " * ").split()).replace("* *", "**")
        out.append((ctype, m.group(2)))
    return tuple(out)


def int_value(expr, known):
    """The value of an enum initializer made of integers, known names, + and - (else None)."""
    tokens = re.findall(r"\w+|[+-]", expr)
    total, sign = 0, 1
    for t in tokens:
        if t in "+-":
            sign = 1 if t == "+" else -1
            continue
        v = int(t, 0) if re.match(r"^\d", t) else known.get(t)
        if v is None:
            return None
        total += sign * v
        sign = 1
    return total if tokens else None


def generate(header):
    with open(header) as fh:
        source = fh.read()
    version = re.search(r'#define GPUOPS_VERSION_STRING "([^"]+)"', source).group(1)
    lines = [f'#include "{os.path.basename(header)}"']
    for macro, (cols, keep, extra) in CORE_LISTS.items():
        row = ", ".join(c for c in keep)
        lines.append(f"#define GPUOPS__PY_ROW_{macro}({', '.join(cols)}) @ROW {macro} ({row}) @END")
        lines.append(f"{macro}(GPUOPS__PY_ROW_{macro}{extra})")
    for macro, (cols, keep) in REGISTRIES.items():
        row = ", ".join(c for c in keep)
        lines.append(f"#ifdef {macro}")
        lines.append(f"#define GPUOPS__PY_ROW_{macro}({', '.join(cols)}) @ROW {macro} ({row}) @END")
        lines.append(f"{macro}(GPUOPS__PY_ROW_{macro})")
        lines.append("#endif")
    text = preprocess(header, "\n".join(lines) + "\n")
    flat = " ".join(text.split())

    # Public prototypes: gpuops_<name>(...) declared with a return type, not private (gpuops__).
    functions = {}
    for m in re.finditer(r"(?:^|(?<=[;}]))\s*((?:const\s+)?\w+(?:\s*\*+\s*|\s+))(gpuops_(?!_)\w+)\s*\(([^(){};]*)\)\s*;", flat):
        functions[m.group(2)] = (" ".join(m.group(1).replace("*", " *").split()), parse_params(m.group(3)))

    # Public structs: their fields in order ("int64_t ldr, ldp;" gives two).
    structs = {}
    for m in re.finditer(r"typedef struct (gpuops_(?!_)\w+) \{([^}]*)\} \1;", flat):
        fields = []
        for decl in m.group(2).split(";"):
            decl = decl.strip()
            if not decl:
                continue
            first, *rest = [d.strip() for d in decl.split(",")]
            arr = re.match(r"^(.*?)\s*\[(\d+)\]$", first)  # an array field: its type is "T[n]"
            ctype, name = parse_params(arr.group(1) if arr else first)[0]
            fields.append((ctype + (f"[{arr.group(2)}]" if arr else ""), name))
            base = ctype.replace("*", "").strip()
            for d in rest:
                a = re.match(r"^(.*?)\s*\[(\d+)\]$", d)
                fields.append(((base + " " + "*" * d.count("*")).strip() + (f"[{a.group(2)}]" if a else ""), (a.group(1) if a else d).strip("* ")))
        structs[m.group(1)] = tuple(fields)

    # Public enums with their values.
    enums, known = {}, {}
    for m in re.finditer(r"typedef enum (gpuops_(?!_)\w+) \{([^}]*)\} \1;", flat):
        values, nxt = {}, 0
        for item in m.group(2).split(","):
            item = item.strip()
            if not item:
                continue
            name, _, init = item.partition("=")
            name = name.strip()
            v = int_value(init, known) if init.strip() else nxt
            if v is None:
                continue
            values[name] = known[name] = v
            nxt = v + 1
        enums[m.group(1)] = {k: v for k, v in values.items() if not k.endswith("_")}

    rows = {}
    for m in re.finditer(r"@ROW (\w+) \((.*?)\) @END", flat):
        cells = []
        for c in m.group(2).split(","):
            c = c.strip()
            if re.match(r'^".*"$', c):
                cells.append(c[1:-1])
            elif re.match(r"^-?\d+$", c):
                cells.append(int(c))
            elif re.match(r"^-?\d+\.\d*$", c):
                cells.append(float(c))
            else:
                cells.append(c)
        rows.setdefault(m.group(1), []).append(tuple(cells))
    algos = {name: value for name, value in rows.get("GPUOPS_ALGO_LIST", [])}
    float_types = tuple(r[0] for r in rows.get("GPUOPS__FLOAT_TYPES", []))
    registries = {macro.replace("GPUOPS__", ""): tuple(rows.get(macro, ())) for macro in REGISTRIES}

    pp = pprint.PrettyPrinter(width=120, compact=True, sort_dicts=True)
    out = [
        "# SPDX-License-Identifier: MIT",
        '"""The C API of gpuops.h as data, generated by python/gen_capi.py: do not edit (`make capi`',
        'rewrites it, `make test` checks that it is current)."""',
        "",
        f"VERSION = {version!r}",
        "",
        "# name -> (return type, ((parameter type, parameter name), ...)) for every public function.",
        f"FUNCTIONS = {pp.pformat(functions)}",
        "",
        "# struct type -> ((field type, field name), ...) in declaration order.",
        f"STRUCTS = {pp.pformat(structs)}",
        "",
        "# enum type -> {name: value}.",
        f"ENUMS = {pp.pformat(enums)}",
        "",
        "# GPUOPS_ALGO_LIST: version name -> gpuops_algo value.",
        f"ALGOS = {pp.pformat(algos)}",
        "",
        "# GPUOPS__FLOAT_TYPES: the floating-point storage suffixes.",
        f"FLOAT_TYPES = {float_types!r}",
        "",
        "# The family registries, one row per op, the columns listed in python/gen_capi.py REGISTRIES.",
        f"REGISTRIES = {pp.pformat(registries)}",
        "",
    ]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--header", default=os.path.join(ROOT, "gpuops.h"))
    ap.add_argument("--out", default=os.path.join(ROOT, "python", "gpuops", "_capi.py"))
    ap.add_argument("--check", action="store_true", help="fail if --out differs from what the header gives")
    args = ap.parse_args()
    text = generate(args.header)
    if args.check:
        old = open(args.out).read() if os.path.exists(args.out) else ""
        ok = old == text
        print(f"{os.path.relpath(args.out, ROOT)} is {'current' if ok else 'stale: run make capi'}")
        print(f"{int(ok)} passed, {int(not ok)} failed, 0 skipped")
        sys.exit(0 if ok else 1)
    with open(args.out, "w") as fh:
        fh.write(text)
    print(f"wrote {os.path.relpath(args.out, ROOT)}: {text.count(chr(10))} lines")


if __name__ == "__main__":
    main()
