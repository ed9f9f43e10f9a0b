# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Op schemas, one module per family; importing this package registers them all."""

from . import (  # noqa: F401
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
