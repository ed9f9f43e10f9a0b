# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Keys of the tuning database: which device, which versions, which problem.

A target describes a problem as a JSON-able dict (kernel, attributes, dims, strides, dtypes,
threads, ...); `problem_key` makes it canonical (sorted keys, numpy scalars as Python
numbers) and hashes it. The device and version strings come from the target (cpu.py:
the CPU ISA oneDNN dispatches to, graphkiln and oneDNN versions; a gpu target would use the
GPU arch and its BLAS / toolkit versions)."""

from __future__ import annotations

import hashlib
import json

import numpy as np

from .db import TuningKey


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:
        return "nan"
    return value


def canonical(description: dict) -> str:
    """The description as canonical JSON: the same problem always gives the same text."""
    return json.dumps(_plain(description), sort_keys=True, separators=(",", ":"))


def versions_string(versions: dict) -> str:
    """{"graphkiln": "0.1.0", "onednn": "3.2.1"} -> "graphkiln=0.1.0;onednn=3.2.1"."""
    return ";".join(f"{k}={versions[k]}" for k in sorted(versions))


def problem_key(target: str, device: str, versions: dict, description: dict) -> TuningKey:
    detail = canonical(description)
    digest = hashlib.sha256(detail.encode()).hexdigest()[:32]
    return TuningKey(
        target=target,
        device=device,
        versions=versions_string(versions),
        problem=digest,
        kernel=str(description.get("kernel", "")),
        detail=detail,
    )
