"""Ports to listen on are taken below the kernel's ephemeral range, so no outgoing
connection takes one between its choice and the bind."""

from __future__ import annotations

import socket

from kmigrate import net


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    low = net._ephemeral_low()
    ports = net.free_ports(40)
    assert len(set(ports)) == 40
    if low - net.LOWEST_LISTEN_PORT >= 1040:
        assert all(net.LOWEST_LISTEN_PORT <= p < low for p in ports), (low, ports)
    for port in ports[:5]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_never_handed_out(monkeypatch) -> None:
    monkeypatch.setattr(net, "LOWEST_LISTEN_PORT", net._ephemeral_low() - 1100)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", net._ephemeral_low() - 1050))
        taken = held.getsockname()[1]
        for _ in range(20):
            assert taken not in net.free_ports(50)


def test_without_a_known_range_the_kernel_picks(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(net, "EPHEMERAL_RANGE_FILE", tmp_path / "missing")
    ports = net.free_ports(3)
    assert len(set(ports)) == 3 and all(p > 0 for p in ports)
