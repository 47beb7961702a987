"""A process that ends when its parent ends, whatever ends the parent (``kill -9`` included): Linux's
``PR_SET_PDEATHSIG`` asks the kernel to send the process a signal the moment its parent exits, so it needs no
thread of the process to be scheduled, and holds under any load. Used by the local process pool's fork server and
workers (banditbench/worker_signals.py, runner/executors.py); at the top of the package so that importing it
imports nothing but the standard library."""

import ctypes
import os

PARENT_VARIABLE = "BANDITBENCH_POOL_PARENT"  # the pid of the run's process, for the fork server it starts
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(sig: int, parent: int) -> bool:
    """Ask Linux to send ``sig`` to this process when ``parent`` (its parent now) ends; False where it cannot
    (not Linux), or when ``parent`` has ended already (so that no signal will come)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):  # no C library to load, or no prctl in it
        return False
    return os.getppid() == parent
