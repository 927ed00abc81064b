# SPDX-License-Identifier: MIT
"""tools/sass_summary.py - reads `cuobjdump -sass` output on stdin and prints, for each kernel of
the elementwise engine, its instruction count and how many of its loads and stores are 128-bit,
with the counts of the main arithmetic and special-function instructions. A check that the
vectorized kernels really issue LDG.E.128/STG.E.128 and what the math costs."""
import re
import subprocess
import sys

text = sys.stdin.read()
rows = []
for chunk in re.split(r"\n\s+Function : ", text)[1:]:
    name = chunk.split("\n", 1)[0].strip()
    body = re.findall(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", chunk)
    ops = [b.split()[0] if not b.startswith("@") else b.split()[1] for b in body]
    def count(prefix):
        return sum(1 for o in ops if o.startswith(prefix))
    ld128 = sum(1 for b in body if re.search(r"LDG\.E\.(128|ENL2\.256)", b))
    st128 = sum(1 for b in body if re.search(r"STG\.E\.128", b))
    rows.append((name, len(ops), count("LDG"), ld128, count("STG"), st128, count("FFMA") + count("FMUL") + count("FADD"), count("MUFU")))
names = subprocess.run(["c++filt"], input="\n".join(r[0] for r in rows), capture_output=True, text=True).stdout.split("\n")
print(f"{'instrs':>6} {'LDG':>4} {'LDG128':>6} {'STG':>4} {'STG128':>6} {'fp32':>5} {'MUFU':>5}  kernel")
for r, n in sorted(zip(rows, names), key=lambda rn: rn[1]):
    if "map_vectorized" in n:
        short = re.sub(r"gpuops::", "", n)
        short = re.sub(r"\(.*", "", short)[:150]
        print(f"{r[1]:6d} {r[2]:4d} {r[3]:6d} {r[4]:4d} {r[5]:6d} {r[6]:5d} {r[7]:5d}  {short}")
