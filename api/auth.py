"""Bearer-token check in front of every route but the health checks (`[api] auth = "token"`).

Why an ASGI wrapper and not a check in each handler: a route added later is covered without
anyone remembering to. /healthz and /readyz stay open because load balancers, `lagwatch status`
and orchestrators probe them without credentials, and they reveal nothing about the lake's
groups. The comparison is constant-time (hmac.compare_digest), so response time does not leak
how much of a guessed token was right. A refusal is 401 with `WWW-Authenticate: Bearer` (RFC
6750), its body shaped like the path's own answers: Burrow's JSON error under /v3, plain text
elsewhere, so a Burrow client reports it as it reports any other error.
"""

from __future__ import annotations

import hmac
import json

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from api import burrow

#: Paths answered without a token.
OPEN_PATHS = frozenset({"/healthz", "/readyz"})
REALM = "lagwatch"


def bearer_token(authorization: str) -> str | None:
    """The token of an "Authorization: Bearer <token>" header value (scheme case-insensitive)."""
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _refusal(path: str, presented: bool) -> Response:
    """The 401 answer to a request without a valid token."""
    message = "invalid bearer token" if presented else "missing bearer token (Authorization: Bearer <token>)"
    challenge = {"WWW-Authenticate": f'Bearer realm="{REALM}"' + (', error="invalid_token"' if presented else "")}
    if path.startswith("/v3/"):
        status, body = burrow.error(path, 401, message)
        return Response(json.dumps(body, separators=(",", ":")), status, challenge, "application/json")
    return PlainTextResponse(f"{message}\n", 401, challenge)


class BearerTokenAuth:
    """ASGI middleware: HTTP requests need the token, except `OPEN_PATHS`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    def allowed(self, authorization: str | None) -> bool:
        presented = bearer_token(authorization or "")
        return presented is not None and hmac.compare_digest(presented.encode(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        authorization = Headers(scope=scope).get("authorization") or None  # an empty header is none
        if self.allowed(authorization):
            await self.app(scope, receive, send)
            return
        await _refusal(scope["path"], authorization is not None)(scope, receive, send)
