# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln's wheel-variant provider: the GPU ISAs and runtime majors of this machine, as
variant properties (`amd :: gfx_arch :: gfx942`, `nvidia :: sm_arch :: 90_real`, ...).

`plugin` holds the plugins variantlib loads (`AMDPlugin`, `NvidiaPlugin`); `probes` the
probes and their pure parsers. Standard library only.
"""

__version__ = "0.1.0"
