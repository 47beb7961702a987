"""Imported only by the fork server of a local process pool, first in its preload list (runner/executors.py);
it lives at the top of the package so that importing it imports nothing but the standard library and
banditbench/parent_death.py.

A terminal's Ctrl-C sends SIGINT to the whole process group, workers included. The run's own process stops
its workers; a worker that saw the signal itself would print a traceback, even one still starting. The fork
server records its signal handlers after importing its preload modules and gives them to every worker it
forks, so ignoring SIGINT here makes every worker ignore it from its first instruction.

The fork server must also end with the run's process, however that ends (``kill -9`` included): otherwise it
lives on until its last worker has ended, and the folder where multiprocessing put its socket (``pymp-*`` in the
temporary folder, which the run's process removes only when it exits normally) stays behind. When the run's
process started the server from its main thread, it names itself in ``BANDITBENCH_POOL_PARENT``, and the server
asks Linux to send it SIGTERM the moment that process ends (``PR_SET_PDEATHSIG``; the kernel signals, so it
works under any load). On that signal the server removes the socket's ``pymp-*`` folder and exits at once; its
workers follow within the same instant: each asks for SIGKILL on the server's end as its first act after the fork,
before it reads its start-up data from the run (a worker killed while starting would otherwise live on).
"""

import os
import shutil
import signal

from banditbench.parent_death import PARENT_VARIABLE, die_with_parent

signal.signal(signal.SIGINT, signal.SIG_IGN)


def _server_ends(signum, frame) -> None:
    if os.getpid() != _server:  # a worker forked with this handler: end as SIGTERM always ended it
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    from multiprocessing import forkserver

    address = getattr(forkserver._forkserver, "_forkserver_address", None)
    if isinstance(address, str) and os.path.basename(os.path.dirname(address)).startswith("pymp-"):
        shutil.rmtree(os.path.dirname(address), ignore_errors=True)
    os._exit(0)  # no interpreter teardown: the workers end with this process


def _worker_ends_with_server() -> None:
    global _forking_server
    if _forking_server:  # a child of the server, not a process one of its workers forked
        _forking_server = False
        die_with_parent(signal.SIGKILL, _server)
        if os.getppid() != _server:  # the server ended between the fork and the request
            os._exit(1)


_server = os.getpid()
_forking_server = True  # fork copies it: True in the server's children only until their hook clears it
os.register_at_fork(after_in_child=_worker_ends_with_server)
_parent = os.environ.get(PARENT_VARIABLE)
if _parent == str(os.getppid()):
    signal.signal(signal.SIGTERM, _server_ends)
    if not die_with_parent(signal.SIGTERM, int(_parent)):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if os.getppid() != int(_parent):  # the run ended while this server was starting
            os._exit(0)
