"""Limits of a query worker process: no network, a memory bound.

Defence in depth behind the parse-based SERVICE check (kb_dumps/sparql_check.py): pyoxigraph's HTTP client
is Rust code, so a Python-level socket guard would not stop it; a network namespace does. On Linux the worker
moves into a new, empty network namespace (only a down loopback: every connect fails with "network is
unreachable"), as root directly, otherwise inside a new user namespace where unprivileged user namespaces
are enabled. Elsewhere (macOS, Windows, kernels or containers that forbid it) the worker keeps the network
and only the parse check stands; `isolate_network` says which.

Both must run before pyoxigraph is imported: unshare(CLONE_NEWUSER) needs a single-threaded process, and
RocksDB starts threads when the store opens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000


def isolate_network() -> str:
    """Cut this process off from the network. Returns "netns" when done, else why not (it keeps running).
    KBQA_NO_NETNS=1 skips it, as on a platform without network namespaces (the tests run both ways)."""
    if os.environ.get("KBQA_NO_NETNS", "") not in ("", "0"):
        return "not isolated: KBQA_NO_NETNS is set"
    if not sys.platform.startswith("linux"):
        return f"not isolated: no network namespaces on {sys.platform}"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError as e:
        return f"not isolated: libc not loadable ({e})"
    for flags in (CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNET):
        if libc.unshare(flags) == 0:
            return "netns"
    return f"not isolated: unshare refused ({os.strerror(ctypes.get_errno())})"


def bound_memory(limit_bytes: int | None) -> None:
    """Bound this process's address space: past it an allocation fails (pyoxigraph aborts, Python raises
    MemoryError) and the worker is replaced by the store. None or 0: no bound."""
    if not limit_bytes or sys.platform == "win32":
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = limit_bytes if hard == resource.RLIM_INFINITY else min(limit_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
