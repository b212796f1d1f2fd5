"""Which addresses processes listen on, read from /proc (Linux): for the loopback-by-default test."""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from pathlib import Path

_LISTEN = "0A"


def descendants(pids: set[int]) -> set[int]:
    """``pids`` and every process below them."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(stat.parent.name)] = int(fields[1])
    found = set(pids)
    while True:
        more = {child for child, ppid in parent.items() if ppid in found} - found
        if not more:
            return found
        found |= more


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:  # the process ended meanwhile
        pass
    return inodes


def _address(hex_address: str) -> tuple[str, int]:
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, struct.pack("<I", int(host, 16))), int(port, 16)
    words = struct.unpack("<4I", raw)
    return socket.inet_ntop(socket.AF_INET6, struct.pack(">4I", *words)), int(port, 16)


def listening(pids: set[int]) -> dict[int, str]:
    """Port -> address of every TCP socket in LISTEN state held by ``pids``."""
    inodes = set().union(*(_socket_inodes(pid) for pid in pids)) if pids else set()
    out: dict[int, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == _LISTEN and fields[9] in inodes:
                host, port = _address(fields[1])
                out[port] = host
    return out


def is_loopback(host: str) -> bool:
    address = ipaddress.ip_address(host)
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback
