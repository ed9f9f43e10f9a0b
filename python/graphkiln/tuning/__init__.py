# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Kernel tuning: measured kernel choices stored in a SQLite database (see README.md).

compile(..., exhaustive_tune=True)   measure the candidates of every tunable kernel,
                                     store the winners
compile(...)                         look the winners up (heuristics on a miss)
graphkiln tune MODEL / --export FILE / --import FILE
"""

from .counters import counters, reset_counters
from .db import SCHEMA_VERSION, Entry, TuningDB, TuningKey, TuningWarning, default_path
from .keys import canonical, problem_key

__all__ = [
    "SCHEMA_VERSION",
    "Entry",
    "TuningDB",
    "TuningKey",
    "TuningWarning",
    "canonical",
    "counters",
    "default_path",
    "problem_key",
    "reset_counters",
]
