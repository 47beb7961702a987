"""Imported only by the fork server of a local process pool, first in its preload list (runner/executors.py);
it lives at the top of the package so that importing it imports nothing else.

A terminal's Ctrl-C sends SIGINT to the whole process group, workers included. The run's own process stops
its workers; a worker that saw the signal itself would print a traceback, even one still starting. The fork
server records its signal handlers after importing its preload modules and gives them to every worker it
forks, so ignoring SIGINT here makes every worker ignore it from its first instruction.
"""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
