# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Host steps: ops the gpu has no kernel for yet, run natively on the host by the C++ core's
cpu kernels inside the gpu plan (as onnxruntime's CUDA provider hands such nodes to its cpu
provider).

The ops are those whose lowering lives in targets/native and emits kernels src/cpu has but
src/gpu does not (HOST_MODULES): the lowering runs on the gpu's LoweringContext inside
`ctx.host_steps("cpu", HOST_LOWERINGS)`, so its steps are checked against the cpu kernels'
contracts and named "Host.<kernel>". The gpu executor runs each between a copy of its inputs
to the host and a copy of its outputs back, synchronizing the run's stream twice
(src/gpu/host_step.hip), and a plan holding one is not replayed as a graph:
`plan_summary()["graph"]` names the op, `plan_summary()["host_steps"]` counts them. Slow
next to a gpu kernel, but the model runs, natively, instead of being refused; a gpu kernel
for the op replaces its entry here.

Ops whose output size the run decides (NonMaxSuppression, Unique, NonZero, Compress) write
into a slot of their bound; the gpu plan cuts those outputs after the run (native/bounded.py)
and so takes them only as graph outputs (the cpu cuts its plan into segments there; a gpu
plan is one)."""

from __future__ import annotations

from ..native import (
    lower_col2im,
    lower_conv_transpose,
    lower_data,
    lower_det,
    lower_image,
    lower_indexing,
    lower_integer,
    lower_lp_pool,
    lower_lrn_unpool,
    lower_nms,
    lower_rnn,
    lower_select,
    lower_signal,
)
from ..native.lower import LoweringContext
from ..native.lower_support import SupportContext, node_supported

# native lowering modules whose kernels only src/cpu has
HOST_MODULES = (
    lower_image,  # GridSample, RoiAlign
    lower_indexing,  # GatherND, ReverseSequence
    lower_rnn,  # RNN, GRU, LSTM
    lower_signal,  # DFT, STFT, MelWeightMatrix
    lower_col2im,  # Col2Im
    lower_lrn_unpool,  # LRN, MaxUnpool
    lower_conv_transpose,  # ConvTranspose (the direct kernel)
    lower_det,  # Det
    lower_lp_pool,  # LpPool
    lower_nms,  # NonMaxSuppression: rows decided by the run (native/bounded.py)
    lower_select,  # Unique, Compress, NonZero: lengths decided by the run
    lower_integer,  # MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv
)
HOST_LOWERINGS: dict = {}
for _module in HOST_MODULES:
    HOST_LOWERINGS.update(_module.LOWERINGS)
# Tile's shared lowering emits CopyRegions / a StridedCopy of twice the rank, beyond the
# gpu's copy kernel (8 dims): on the host
HOST_LOWERINGS["Tile"] = lower_data.LOWERINGS["Tile"]
# what the predicates of those lowerings see: the cpu kernels' target and their own table
HOST_SUPPORT = SupportContext("cpu", HOST_LOWERINGS)


def host_lowering(op: str):
    """A gpu lowering of `op`: the native lowering's steps as host steps."""
    native_lower = HOST_LOWERINGS[op]

    def lower_on_host(node, ctx: LoweringContext) -> None:
        with ctx.host_steps("cpu", HOST_LOWERINGS):
            native_lower(node, ctx)

    lower_on_host.supports = lambda node, ctx=None: node_supported(node, HOST_SUPPORT)
    lower_on_host.host_step = True
    # what lower_support.node_supported reads of a lowering (bounded outputs: NMS, Unique, ...)
    for name in ("bounded_outputs", "byte_dtypes", "possible"):
        if hasattr(native_lower, name):
            setattr(lower_on_host, name, getattr(native_lower, name))
    return lower_on_host


def add_host_lowerings(gpu_lowerings: dict) -> dict:
    """`gpu_lowerings` (a new dict) with a host step for every op of HOST_LOWERINGS the gpu
    does not lower itself."""
    table = dict(gpu_lowerings)
    for op in sorted(set(HOST_LOWERINGS) - set(gpu_lowerings)):
        table[op] = host_lowering(op)
    return table


def host_ops(table: dict) -> list[str]:
    """The ops of a gpu lowering table that run as host steps."""
    return sorted(op for op, f in table.items() if getattr(f, "host_step", False))
