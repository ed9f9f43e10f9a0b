# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The secret that authenticates saved cpu plans (cpu_plan.py).

A saved plan is run by the C++ kernels as it is, and their build-time checks assume the
lowering wrote it: a crafted plan could make a kernel read out of bounds. So a plan is used
only when its HMAC-SHA256 under this installation's secret matches, that is when it was
saved here (or where the same secret file was copied, e.g. to a fleet of servers). Any
other plan is ignored and the compiled graph is lowered again, which trusts nothing.

The secret is 32 random bytes in $XDG_CACHE_HOME/graphkiln/plan_secret (XDG_CACHE_HOME
defaulting to ~/.cache), made on first use, readable by its owner only. Where it cannot be
read or made, programs are saved without a plan."""

from __future__ import annotations

import hashlib
import hmac
import os

SECRET_BYTES = 32
_cache: dict[str, bytes | None] = {}


def secret_path() -> str:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "graphkiln", "plan_secret")


def plan_secret() -> bytes | None:
    """This installation's secret (made on first use), or None where it cannot be had."""
    path = secret_path()
    if path not in _cache:
        _cache[path] = _read_or_make(path)
    return _cache[path]


def _read_or_make(path: str) -> bytes | None:
    try:
        if not os.path.exists(path):  # written whole, then linked: no reader sees it half made
            os.makedirs(os.path.dirname(path), exist_ok=True)
            temporary = f"{path}.tmp{os.getpid()}"
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(os.urandom(SECRET_BYTES))
                try:
                    os.link(temporary, path)
                except FileExistsError:  # another process made it first: use theirs
                    pass
            finally:
                os.remove(temporary)
        with open(path, "rb") as f:
            secret = f.read(SECRET_BYTES + 1)
    except OSError:
        return None
    return secret if len(secret) == SECRET_BYTES else None


def plan_mac(secret: bytes, message: bytes) -> str:
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def mac_matches(secret: bytes | None, message: bytes, mac: str) -> bool:
    if secret is None or not mac.isascii():
        return False
    return hmac.compare_digest(plan_mac(secret, message), mac)
