"""Assembles the server: the protocol and state (server.py) plus the
features (handlers.py) and commands (commands.py), which import server.py;
kept apart so that server.py imports neither (no import cycle)."""

from __future__ import annotations

from torchtrap.lsp.commands import register_commands
from torchtrap.lsp.handlers import register
from torchtrap.lsp.server import TorchTrapServer


def create_server() -> TorchTrapServer:
    server = TorchTrapServer()
    register(server)
    register_commands(server)
    return server
