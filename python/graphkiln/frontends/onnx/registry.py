# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The table of ONNX ops the frontend imports, gathered from one module per family."""

from . import (
    elementwise,
    activation,
    cast,
    tensor,
    indexing,
    generate,
    conv,
    pool,
    normalization,
    image,
    reduce,
    linalg,
    softmax,
    quantize,
    attention,
    rnn,
    signal,
    control,
    sequence,
    text,
)

FAMILIES = (
    elementwise,
    activation,
    cast,
    tensor,
    indexing,
    generate,
    conv,
    pool,
    normalization,
    image,
    reduce,
    linalg,
    softmax,
    quantize,
    attention,
    rnn,
    signal,
    control,
    sequence,
    text,
)
