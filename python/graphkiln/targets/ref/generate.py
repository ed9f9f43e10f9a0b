# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of tensors from nothing or from shapes: Constant, ConstantOfShape, Range, EyeLike,
random ops."""

import numpy as np

from ...ir.ops.generate import range_count


def Constant(*, value):
    return value


def ConstantOfShape(shape, *, value):
    fill = np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)
    return np.full(tuple(int(d) for d in shape.reshape(-1)), fill[0], dtype=fill.dtype)


def Range(start, limit, delta, *, stash_type):
    dtype = start.dtype
    start, limit, delta = (np.asarray(v).reshape(-1)[0] for v in (start, limit, delta))
    count = range_count(start, limit, delta)
    if dtype.kind in "iu":
        return (int(start) + np.arange(count, dtype=np.int64) * int(delta)).astype(dtype)
    # stash_type 1 (float): float16/bfloat16 bounds are computed in float32; any other
    # stash_type keeps the input type
    if dtype.itemsize < 4 and stash_type == 1:
        work = np.dtype(np.float32)
    else:
        work = dtype
    steps = np.arange(count).astype(work)
    return (work.type(start) + steps * work.type(delta)).astype(dtype)


def EyeLike(x, *, dtype, k):
    out_dtype = x.dtype if dtype is None else dtype.numpy
    rows, cols = x.shape
    return np.eye(rows, cols, k, dtype=out_dtype)


def _rng(seed):
    # `seed` is a float attribute: its bit pattern seeds the generator, so 0.5 != 0.0
    return np.random.default_rng(None if seed is None else int(np.float64(seed).view(np.uint64)))


def RandomUniform(*, shape, dtype, low, high, seed):
    return _rng(seed).uniform(low, high, size=tuple(shape)).astype(dtype.numpy)


def RandomNormal(*, shape, dtype, mean, scale, seed):
    return _rng(seed).normal(mean, scale, size=tuple(shape)).astype(dtype.numpy)


def RandomUniformLike(x, *, dtype, low, high, seed):
    out = x.dtype if dtype is None else dtype.numpy
    return _rng(seed).uniform(low, high, size=x.shape).astype(out)


def RandomNormalLike(x, *, dtype, mean, scale, seed):
    out = x.dtype if dtype is None else dtype.numpy
    return _rng(seed).normal(mean, scale, size=x.shape).astype(out)


def Bernoulli(p, *, dtype, seed):
    out = p.dtype if dtype is None else dtype.numpy
    draws = _rng(seed).uniform(size=p.shape) < p.astype(np.float64)
    return draws.astype(out)


def Multinomial(logits, *, dtype, sample_size, seed):
    # each row holds unnormalized log-probabilities of the classes
    rng = _rng(seed)
    logits = logits.astype(np.float64)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    samples = [rng.choice(probs.shape[1], size=sample_size, p=row) for row in probs]
    return np.array(samples, dtype=dtype.numpy).reshape(probs.shape[0], sample_size)


KERNELS = {
    "Constant": Constant,
    "ConstantOfShape": ConstantOfShape,
    "Range": Range,
    "EyeLike": EyeLike,
    "RandomUniform": RandomUniform,
    "RandomNormal": RandomNormal,
    "RandomUniformLike": RandomUniformLike,
    "RandomNormalLike": RandomNormalLike,
    "Bernoulli": Bernoulli,
    "Multinomial": Multinomial,
}
