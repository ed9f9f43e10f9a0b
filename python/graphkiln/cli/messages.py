# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Errors as the command line words them: the library's messages give Python advice
(`compile(..., fallback='ref')`); here the same advice names the command-line flag."""

from __future__ import annotations


def error_text(exc: BaseException) -> str:
    """The message of `exc` for a terminal: a missing-kernel LoweringError (see
    targets/native/lower.py) advises `--fallback ref` instead of the Python keyword."""
    from ..targets.native.lower import LoweringError

    if isinstance(exc, LoweringError) and exc.fallback:
        them = "it" if len(exc.ops) == 1 else "them"
        return f"{exc.problem}; --fallback {exc.fallback} runs {them} on {exc.fallback}"
    return str(exc)
