"""An OAuth 2 token endpoint on loopback for the secured broker's OAUTHBEARER listener: the
client-credentials grant, RS256-signed JWT access tokens, and the JWKS the broker verifies them with.

A test double for the identity provider (oidc-provider-mock, `harness/oidc_provider.py`, has no
client-credentials grant): the broker's own validator (`OAuthBearerValidatorCallbackHandler`)
checks the signature against `jwks_url`, so a token it accepts is one this endpoint signed.
Clients are `client id → secret`; a token's `sub` is its client id, so the ACLs of User:<client
id> apply. `issued` counts the tokens handed out (a client should reuse one until it is due).
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

KEY_ID = "lagwatch-test"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenEndpoint:
    """`/token` (POST, HTTP Basic client authentication) and `/jwks` (GET), on a free loopback port."""

    def __init__(self, clients: dict[str, str], lifetime_s: int = 600) -> None:
        self.clients = dict(clients)
        self.lifetime_s = lifetime_s
        self.issued = 0
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="token-endpoint", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks"

    def start(self) -> TokenEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (a second call, or one before `start`, does nothing)."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(5)
        self._server.server_close()

    def jwks(self) -> dict[str, Any]:
        numbers = self._key.public_key().public_numbers()
        modulus = numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")
        key = {
            "kty": "RSA",
            "use": "sig",
            "alg": "RS256",
            "kid": KEY_ID,
            "n": _b64(modulus),
            "e": _b64(b"\x01\x00\x01"),
        }
        return {"keys": [key]}

    def sign(self, claims: dict[str, Any]) -> str:
        header = {"alg": "RS256", "typ": "JWT", "kid": KEY_ID}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64(signature)}"

    def grant(self, authorization: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON answer) of one token request."""
        scheme, _, encoded = authorization.partition(" ")
        client_id, _, secret = base64.b64decode(encoded or "").decode(errors="replace").partition(":")
        if scheme != "Basic" or self.clients.get(client_id) != secret or not secret:
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        now = int(time.time())
        claims = {"sub": client_id, "iat": now, "exp": now + self.lifetime_s, "iss": self.url,
                  "scope": form.get("scope", "")}  # fmt: skip
        self.issued += 1
        return 200, {"access_token": self.sign(claims), "token_type": "Bearer", "expires_in": self.lifetime_s}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer(*((200, endpoint.jwks()) if self.path == "/jwks" else (404, {"error": "not_found"})))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                if self.path != "/token":
                    self._answer(404, {"error": "not_found"})
                    return
                self._answer(*endpoint.grant(self.headers.get("Authorization", ""), form))

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:  # quiet: the test output is not its log
                pass

        return Handler
