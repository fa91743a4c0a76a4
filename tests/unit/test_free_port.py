"""`free_port`: the local services' ports stay out of the range client sockets take theirs from."""

from __future__ import annotations

import socket

from devkit.services.process import _bindable, _ephemeral_port_range, free_port


def test_ports_are_below_the_ephemeral_range_distinct_and_bindable() -> None:
    ephemeral_low, _ = _ephemeral_port_range()
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    assert all(10_000 <= port < ephemeral_low for port in ports)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", ports[0]))


def test_a_port_something_listens_on_is_not_free() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        taken = listener.getsockname()[1]
        assert not _bindable(taken)
