#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Make every absolute symbolic link under a root relative, so the root works as a sysroot:
`/lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/ld-2.31.so` would otherwise point out
of it, at the build system's own files.

    python3 docker/relative_links.py ROOT
"""

import os
import sys


def relink(root: str) -> int:
    changed = 0
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                target = os.readlink(path)
                if target.startswith("/"):
                    os.unlink(path)
                    os.symlink(os.path.relpath(root + target, folder), path)
                    changed += 1
    return changed


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: relative_links.py ROOT (an existing folder)")
    print(f"relative_links: {relink(os.path.abspath(sys.argv[1]))} links made relative")
