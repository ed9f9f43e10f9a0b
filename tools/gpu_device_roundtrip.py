# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Save / load round trips of programs compiled for gpu, on the machine with the GPU.

    python3 tools/gpu_device_roundtrip.py --dir /tmp/models --models resnet50,bert

Per model: import + compile for gpu (timed), save (msgpack, in memory), load (timed: the
saved compiled graph is lowered again for this GPU, no passes), run both programs on the
recorded feeds; the outputs must be bit-identical. The saved document records the GPU
architecture; prints a markdown table and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import sys
import time

import msgpack  # noqa: F401 - graphkiln's saved format; fail early when missing
import numpy as np

import graphkiln


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--models", required=True)
    args = parser.parse_args()
    print(
        "| model | compile s | load s | compile/load | saved MiB | gpu arch "
        "| outputs bit-identical |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    failed = 0
    for name in args.models.split(","):
        data = np.load(f"{args.dir}/{name}.npz")
        feeds = {k[6:]: data[k] for k in data.files if k.startswith("input:")}
        start = time.perf_counter()
        program = graphkiln.parse_onnx(f"{args.dir}/{name}.onnx").compile("gpu")
        compile_s = time.perf_counter() - start
        blob = graphkiln.save_buffer(program)
        start = time.perf_counter()
        loaded = graphkiln.load_buffer(blob)
        load_s = time.perf_counter() - start
        arch = getattr(loaded._executable, "arch", None) or "?"
        same = all(
            np.asarray(a).tobytes() == np.asarray(b).tobytes()
            for a, b in zip(program.run(feeds), loaded.run(feeds))
        )
        failed += not same
        print(
            f"| {name} | {compile_s:.3f} | {load_s:.3f} | {compile_s / load_s:.1f}x | "
            f"{len(blob) / 2**20:.1f} | {arch} | {'yes' if same else 'NO'} |",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
