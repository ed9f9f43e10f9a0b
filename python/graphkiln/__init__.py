# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln: import an ONNX model, compile it for a target, run it with numpy arrays.

import graphkiln
prog = graphkiln.parse_onnx("model.onnx")
prog.compile("cpu")                      # or "gpu", or "ref" (numpy: the oracle, slowest)
outputs = prog.run({"x": x})
graphkiln.save(prog, "model.gkp")        # later: graphkiln.load("model.gkp").run(...)
"""

from __future__ import annotations

from .device import GpuCompatibilityError, check_gpu_compatibility
from .errors import (
    CompileError,
    FormatError,
    GraphError,
    GraphkilnError,
    ModelError,
    ParseError,
    UnsupportedOperatorError,
)
from .program import Program
from .targets import available_targets, get_target
from .targets.native.lower import LoweringError
from .version import __version__


def parse_onnx(
    model,
    input_shapes: dict | None = None,
    default_dim: int | None = None,
    *,
    max_tensor_bytes: int | None = None,
) -> Program:
    """Import an ONNX model: a path (str or os.PathLike; external data is read from beside
    it), the serialized model (bytes, bytearray or memoryview) or an onnx.ModelProto (not
    changed); anything else is a TypeError.

    Input dims the model does not fix stay symbolic: a `dim_param` keeps its name (`batch`,
    shared by every input that uses it), an unknown dim (no value, `?` or -1) gets one of its
    own (`images_dim2`); `get_parameter_shapes()` shows them (`f32[batch,3,height,width]`).
    `run` then takes any size there, the same size wherever a symbol repeats, and the cpu and
    gpu targets make a plan per input shape on its first run. A dim declared 0 stays 0 (ONNX
    reads it as an empty axis). `input_shapes` ({name: [ints]}) fixes an input's symbolic
    dims (and dims declared 0); `default_dim=N` sets every other symbolic dim to N. A
    tensor the model
    declares, reads from external data or infers with a static shape that is larger than
    `max_tensor_bytes` (default: GRAPHKILN_MAX_TENSOR_BYTES, else 4 GiB) is refused with a
    ModelError."""
    from .frontends.onnx.importer import import_model, read_model

    return Program(
        import_model(
            read_model(model, max_tensor_bytes), input_shapes, default_dim, max_tensor_bytes
        )
    )


def parse_onnx_buffer(
    data: bytes,
    input_shapes: dict | None = None,
    default_dim: int | None = None,
    *,
    max_tensor_bytes: int | None = None,
) -> Program:
    """Import a serialized ONNX model (external data is refused); `input_shapes`,
    `default_dim` (symbolic dims stay symbolic unless an int is given) and `max_tensor_bytes`
    as for `parse_onnx`."""
    from .frontends.onnx.importer import import_model, model_from_bytes

    return Program(
        import_model(model_from_bytes(data), input_shapes, default_dim, max_tensor_bytes)
    )


def save(program: Program, path, format: str | None = None) -> None:
    """Save a program (compiled or not) as "msgpack" or "json". The default follows the file
    name: `.json` is JSON, any other name MessagePack; a `format` that contradicts a .json /
    .msgpack name is a ValueError. `load` reads either, whatever the name."""
    from .serialize import save as save_program

    save_program(program, path, format)


def save_buffer(program: Program, format: str = "msgpack") -> bytes:
    """The saved program as bytes."""
    from .serialize import save_buffer as save_program_buffer

    return save_program_buffer(program, format)


def load(path, **kwargs) -> Program:
    """Load a saved program, ready to run when it was saved compiled. FormatError when the
    file is not one, is damaged, is of a newer format or names a target this build lacks."""
    from .serialize import load as load_program

    return load_program(path, **kwargs)


def load_buffer(data: bytes, **kwargs) -> Program:
    """Load a program from bytes written by save_buffer (errors as load)."""
    from .serialize import load_buffer as load_program_buffer

    return load_program_buffer(data, **kwargs)


def quantize_int8(
    model,
    calibration,
    *,
    per_channel: bool = True,
    symmetric_activations: bool = False,
    progress=None,
) -> bytes:
    """Post-training static int8 quantization: the serialized QDQ model of a float ONNX model
    (a path, bytes or an onnx.ModelProto), its activation ranges calibrated on `calibration`
    (a non-empty list of feed dicts {input name: numpy array}) run by graphkiln. The float
    activation inputs of Conv / MatMul / Gemm become QuantizeLinear -> DequantizeLinear
    (uint8 asymmetric per tensor; int8 symmetric with `symmetric_activations=True`), their
    float weights int8 per output channel (per tensor with `per_channel=False`); biases and
    other ops stay float. `progress=f` calls f(done, total) after each sample. Bad input is a
    ValueError / TypeError naming it. Details: `graphkiln.quantize.quantize_int8`."""
    from .quantize import quantize_int8 as quantize

    return quantize(
        model,
        calibration,
        per_channel=per_channel,
        symmetric_activations=symmetric_activations,
        progress=progress,
    )


__all__ = [
    "CompileError",
    "FormatError",
    "GpuCompatibilityError",
    "GraphError",
    "GraphkilnError",
    "LoweringError",
    "ModelError",
    "ParseError",
    "Program",
    "UnsupportedOperatorError",
    "__version__",
    "available_targets",
    "check_gpu_compatibility",
    "get_target",
    "load",
    "load_buffer",
    "parse_onnx",
    "parse_onnx_buffer",
    "quantize_int8",
    "save",
    "save_buffer",
]
