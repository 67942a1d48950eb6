"""The OAUTHBEARER token of Lagwatch's own protocol connections: the OIDC client-credentials
grant, asked of `sasl.oauthbearer.token.endpoint.url` as librdkafka asks it.

The request is librdkafka's: a form POST of `grant_type=client_credentials` (and `scope`) with
the client id and secret in HTTP Basic authentication. A token is kept until 80 % of its
lifetime has passed (librdkafka's refresh point), so a reader does not fetch one per connection.
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from collectors.kafka_protocol.security import CLIENT_CREDENTIALS, OidcSettings, SecurityRefused, SecuritySettingError

#: The share of a token's lifetime after which a new one is fetched.
REFRESH_AT = 0.8
#: Lifetime assumed when neither the answer (`expires_in`) nor the token (`exp`) says one.
DEFAULT_LIFETIME_S = 60.0
#: At most this much of an endpoint's error answer goes into the message.
ERROR_BODY_CHARS = 300


class TokenSource:
    """One cluster's bearer token, fetched when there is none or it is due for refresh."""

    def __init__(self, oidc: OidcSettings, cluster: str) -> None:
        self._oidc = oidc
        self._cluster = cluster
        self._context = _https_context(oidc, cluster)
        self._token: str | None = None
        self._refresh_at = 0.0

    def token(self, deadline: float) -> str:
        """A valid access token (fetched within the deadline when due)."""
        if self._token is None or time.monotonic() >= self._refresh_at:
            fetched = time.monotonic()
            self._token, lifetime = self._fetch(max(0.1, deadline - fetched))
            self._refresh_at = fetched + REFRESH_AT * lifetime
        return self._token

    def _fetch(self, timeout: float) -> tuple[str, float]:
        oidc = self._oidc
        form = {"grant_type": CLIENT_CREDENTIALS, **({"scope": oidc.scope} if oidc.scope else {})}
        credentials = base64.b64encode(f"{oidc.client_id}:{oidc.client_secret}".encode()).decode()
        request = urllib.request.Request(
            oidc.token_endpoint_url,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Authorization": f"Basic {credentials}",
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self._context) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            body = exc.read()[:ERROR_BODY_CHARS].decode(errors="replace")
            raise self._refused(f"answered HTTP {exc.code} ({body})", "check sasl.oauthbearer.client.id and "
                                "sasl.oauthbearer.client.secret, and sasl.oauthbearer.scope") from None  # fmt: skip
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise self._refused(f"did not answer ({reason})", "check sasl.oauthbearer.token.endpoint.url") from None
        except ValueError:
            raise self._refused("answered no JSON", "check sasl.oauthbearer.token.endpoint.url") from None
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise self._refused("answered no access_token", "check sasl.oauthbearer.token.endpoint.url")
        return token, _lifetime(answer, token)

    def _refused(self, what: str, fix: str) -> SecurityRefused:
        return SecurityRefused(
            f"cluster {self._cluster}: the OAUTHBEARER token endpoint {self._oidc.token_endpoint_url} {what}; {fix}"
        )


def _https_context(oidc: OidcSettings, cluster: str) -> ssl.SSLContext:
    """The token endpoint's TLS: `https.ca.location` when set, else the system's CAs."""
    try:
        return ssl.create_default_context(cafile=oidc.https_ca_location)
    except (OSError, ssl.SSLError) as exc:
        raise SecuritySettingError(
            f"cluster {cluster}: https.ca.location {oidc.https_ca_location} cannot be loaded ({exc})"
        ) from None


def _lifetime(answer: dict[str, Any], token: str) -> float:
    """Seconds the token lives: the answer's `expires_in`, else the JWT's `exp` claim."""
    expires_in = answer.get("expires_in")
    if isinstance(expires_in, (int, float)) and expires_in > 0:
        return float(expires_in)
    claims = _jwt_claims(token)
    exp = claims.get("exp")
    if isinstance(exp, (int, float)) and exp > time.time():
        return float(exp) - time.time()
    return DEFAULT_LIFETIME_S


def _jwt_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT (unverified: only its expiry is read); {} for anything else."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return {}
    return claims if isinstance(claims, dict) else {}
