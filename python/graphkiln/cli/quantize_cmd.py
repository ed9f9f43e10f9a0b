# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln quantize MODEL --int8 --calibrate DATA -o OUT.onnx`: post-training static int8
quantization (graphkiln/quantize): the QDQ model, its activation ranges calibrated on DATA."""

from __future__ import annotations

import sys
import time

from .calibration_files import ACCEPTED, read_calibration

DESCRIPTION = (
    "Post-training static int8 quantization. Runs the float ONNX MODEL with graphkiln on "
    "each calibration sample of DATA to find the range of every float activation input of "
    "its Conv, MatMul and Gemm nodes and of each Conv's output (or its Relu / Clip's), then "
    "writes OUT, an ONNX model in QDQ form: those activations pass through QuantizeLinear -> "
    "DequantizeLinear (uint8, one scale and zero point per tensor), the ops' float weights "
    "are stored as int8 with one scale per output channel, Conv / Gemm biases as int32, the "
    "other ops stay float. Every graphkiln target runs OUT; the cpu target runs the "
    "quantized Conv / MatMul / Gemm on int8 kernels (compile(..., int8=True))."
)


def setup_quantize(p):
    p.description = DESCRIPTION
    p.add_argument("model", help="the float ONNX model to quantize")
    p.add_argument(
        "--int8",
        action="store_true",
        required=True,
        help="quantize to int8 (required: the only precision for now)",
    )
    p.add_argument("--calibrate", required=True, metavar="DATA", help=f"the samples: {ACCEPTED}")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT.onnx",
        help="where to write the quantized ONNX model (replaced if it exists)",
    )
    p.add_argument(
        "--per-tensor",
        action="store_true",
        help="one scale per weight tensor instead of one per output channel",
    )
    p.add_argument(
        "--symmetric-activations",
        action="store_true",
        help="int8 activations with zero point 0 instead of uint8 with a calibrated zero point",
    )


def _progress_line():
    """A progress callback that prints a line on stderr every 2 s, once calibration has
    taken 2 s (short runs print nothing)."""
    start = last = time.monotonic()

    def report(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= 2.0 and done < total:
            print(f"calibrating: {done}/{total} samples ({now - start:.0f} s)", file=sys.stderr)
            last = now

    return report


def cmd_quantize(args) -> int:
    from ..frontends.onnx.importer import read_model
    from ..quantize import quantize_model
    from ..quantize.samples import model_inputs

    model = read_model(args.model)
    samples = read_calibration(args.calibrate, list(model_inputs(model.graph)))
    quantized, summary = quantize_model(
        model,
        samples,
        per_channel=not args.per_tensor,
        symmetric_activations=args.symmetric_activations,
        progress=_progress_line(),
    )
    try:
        with open(args.output, "wb") as f:
            f.write(quantized.SerializeToString())
    except OSError as exc:
        raise ValueError(f"cannot write {args.output}: {exc.strerror}") from None
    granularity = "per tensor" if args.per_tensor else "per output channel"
    print(
        f"quantized {summary.activations} activation tensor(s), {summary.weights} "
        f"weight(s) (int8, {granularity}) and {summary.biases} bias(es) (int32) "
        f"calibrated on {summary.samples} sample(s); "
        f"wrote {args.output} (opset {summary.opset})"
    )
    return 0
