# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln's intermediate representation: types, graphs, the op schema table, text form."""

from .decomposition import Decomposition
from .dtypes import DType
from .graph import Graph, Node, Value
from .parser import parse_graph
from .printer import print_graph
from .schema import REQUIRED, Attr, OpSchema, all_schemas, define, get_schema
from .types import OptionalType, SequenceType, TensorType, ValueType, fresh_dim, tensor

__all__ = [
    "Decomposition",
    "DType",
    "Graph",
    "Node",
    "Value",
    "parse_graph",
    "print_graph",
    "REQUIRED",
    "Attr",
    "OpSchema",
    "all_schemas",
    "define",
    "get_schema",
    "OptionalType",
    "SequenceType",
    "TensorType",
    "ValueType",
    "fresh_dim",
    "tensor",
]
