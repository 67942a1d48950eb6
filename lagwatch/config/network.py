"""Who can reach a server: the loopback test and the refusal of an unauthenticated outside
address, shared by `[dashboard]` and `[api]` so both answer the same way."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach: 127.0.0.0/8, ::1 or "localhost".

    Any other name counts as reachable from outside: resolving it here would make the answer
    depend on the resolver of whichever machine loads the config.
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def refuse_open_door(section: str, host: str, auth: str, allow_anonymous: bool) -> None:
    """A server on an outside address with no authentication must be asked for in so many words."""
    if auth == "none" and not allow_anonymous and not is_loopback(host):
        raise ValueError(
            f"{section}.host = {host or '(all interfaces)'} is not loopback and {section}.auth = none: "
            f"set {section}.auth or {section}.allow_anonymous = true"
        )
