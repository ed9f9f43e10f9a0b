# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Format constants and the limits a loader enforces before it trusts a declared size."""

from __future__ import annotations

from dataclasses import dataclass

FORMAT_VERSION = 5  # the newest version this build writes and reads
# version 2 added a compiled cpu program's saved plan ("cpu_plan"); version 3 its saved
# specializations for dynamic input shapes ("cpu_plan.plans"); version 4 a compiled gpu
# program's plan shapes ("gpu_plans"); version 5 nodes' decompositions ("decomposition",
# on nodes of top-level graphs). A file is written as the oldest version that has every
# field it uses, which older builds read


def version_of(doc: dict) -> int:
    """The format version a document needs: the oldest that has every field it uses."""
    compiled = doc.get("compiled")
    graphs = [doc.get("graph"), compiled.get("graph") if isinstance(compiled, dict) else None]
    if any(_has_decomposition(g) for g in graphs):
        return 5
    if isinstance(compiled, dict) and "gpu_plans" in compiled:
        return 4
    if not (isinstance(compiled, dict) and "cpu_plan" in compiled):
        return 1
    plan = compiled["cpu_plan"]
    return 3 if isinstance(plan, dict) and "plans" in plan else 2


def _has_decomposition(graph) -> bool:
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    return isinstance(nodes, list) and any(
        isinstance(n, dict) and "decomposition" in n for n in nodes
    )


def check_version(doc: dict, declared: int) -> None:
    """A file declaring an older version than its fields need is damaged (an older build
    would have read it without them)."""
    from .checks import damaged

    needed = version_of(doc)
    if needed > declared:
        raise damaged(
            "format_version",
            f"the file declares version {declared} but holds fields of version {needed}",
        )


MSGPACK_MAGIC = b"GKILN" + b"M"  # "M": the MessagePack container
JSON_MAGIC = "graphkiln"  # value of the "magic" key of a JSON file
DATA_ALIGNMENT = 64  # tensor bytes start at multiples of this in the data section


@dataclass(frozen=True)
class Limits:
    """Upper bounds checked while loading; a file over any of them raises FormatError."""

    max_total_bytes: int = 64 << 30  # sum of all tensors' declared bytes
    max_document_bytes: int = 1 << 30  # the structure (msgpack document or JSON text)
    max_string_bytes: int = 16 << 20  # one name, string attribute or string element
    max_list_length: int = 1 << 26  # one list (nodes, inputs, dims, strings, ...)
    max_rank: int = 64  # dims of one tensor type or tensor
    max_dim: int = 1 << 48  # one dimension
    max_depth: int = 64  # nested subgraphs, nested sequence/optional types
    max_nodes: int = 1 << 24  # nodes of all graphs together


DEFAULT_LIMITS = Limits()
