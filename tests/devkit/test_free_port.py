"""`free_port`: the local services' ports stay out of the range client sockets take theirs from."""

from __future__ import annotations

import random
import socket

import pytest

from devkit.services import process
from devkit.services.process import _bindable, _ephemeral_port_low, free_port


def test_ports_are_below_the_ephemeral_range_and_bindable() -> None:
    ports = [free_port() for _ in range(50)]
    assert all(10_000 <= port < _ephemeral_port_low() for port in ports)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", ports[0]))


class _Draws(random.Random):
    """Draws the given ports in order (a fixed sequence stands in for the random one)."""

    def __init__(self, ports: list[int]) -> None:
        super().__init__()
        self._ports = iter(ports)

    def randint(self, a: int, b: int) -> int:
        return next(self._ports)


def test_a_port_already_handed_out_is_drawn_again_not_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    handed, other = free_port(), free_port()  # both free: only the record of `handed` can refuse it
    monkeypatch.setattr(process, "_HANDED_OUT", {handed})
    monkeypatch.setattr(process, "_PORTS", _Draws([handed, handed, other]))
    assert free_port() == other
    assert {handed, other} == process._HANDED_OUT


def test_a_port_something_listens_on_is_not_free() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        taken = listener.getsockname()[1]
        assert not _bindable(taken)
