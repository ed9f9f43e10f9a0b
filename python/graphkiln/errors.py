# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The exceptions graphkiln raises on purpose. Everything else is a bug."""


class GraphkilnError(Exception):
    """Base of every error graphkiln raises deliberately."""


class ModelError(GraphkilnError, ValueError):
    """A model file or buffer is malformed or unsafe (bad protobuf, bad reference, ...)."""


class UnsupportedOperatorError(GraphkilnError):
    """An operator graphkiln cannot import or run."""

    def __init__(
        self, op: str, node: str = "", domain: str = "", opset: int | None = None, detail: str = ""
    ):
        self.op, self.node, self.domain, self.opset = op, node, domain, opset
        where = f"node {node!r}" if node else "a node"
        dom = domain or "ai.onnx"
        msg = f"operator {op!r} ({where}, domain {dom!r}, opset {opset}) is not supported"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)


class GraphError(GraphkilnError):
    """The IR is inconsistent (bad attribute, undefined value, type mismatch)."""


class ParseError(GraphkilnError, ValueError):
    """IR text that does not parse; the message gives line and column."""


class CompileError(GraphkilnError):
    """A target cannot compile a graph (missing kernel, unsupported option)."""


class FormatError(GraphkilnError, ValueError):
    """A saved program that cannot be loaded (wrong magic, version, target or damaged)."""
