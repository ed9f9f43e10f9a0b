# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The `graphkiln` command line: one module per group of subcommands, wired in main.py."""
