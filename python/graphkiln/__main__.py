# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`python -m graphkiln` is the `graphkiln` command."""

from .cli.main import main

raise SystemExit(main())
