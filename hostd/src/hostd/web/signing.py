"""Signed, stateless sign-in: the session cookie, CSRF tokens and the one-time local link.

Nothing is kept on the server: the cookie carries who signed in, until when, and a fingerprint
of the token they signed in with, all under an HMAC. With ``transport.state_secret_env`` the key
comes from the secret every replica shares, so any replica accepts any replica's cookie; without
it the key is made per process. The CSRF token is an HMAC of the session's own id, so it needs
no storage either. A rotated or removed member token ends the sessions made with it: the
fingerprint no longer matches.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass

SESSION_SECONDS = 12 * 3600
SIGNIN_FORM_SECONDS = 3600


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Session:
    """A signed-in member, as the cookie says: name, session id, expiry, token fingerprint, and
    when it was issued (ms; a sign-out after it ends it: ``hostd.team.signouts``)."""

    member: str
    session_id: str
    expires: int
    fingerprint: str
    issued_ms: int = 0


class Signer:
    """HMAC-SHA256 over the dashboard's cookies and form tokens, with one key."""

    def __init__(self, secret: bytes | None) -> None:
        base = secret if secret is not None else os.urandom(32)
        # A key of its own, derived from the shared secret: a cookie can never pass for a requestState.
        self._key = hmac.new(base, b"hostd dashboard v1", hashlib.sha256).digest()

    def _mac(self, purpose: str, payload: str) -> str:
        return _b64(hmac.new(self._key, f"{purpose}\n{payload}".encode(), hashlib.sha256).digest())

    def fingerprint(self, token_digest: bytes) -> str:
        """What a session keeps of the member's token: a keyed digest, useless without the key."""
        return self._mac("token", token_digest.hex())[:22]

    def session_cookie(self, member: str, fingerprint: str, now: float | None = None) -> str:
        at = now if now is not None else time.time()
        issued = int(at)
        body = {
            "m": member,
            "s": secrets.token_urlsafe(12),
            "e": issued + SESSION_SECONDS,
            "f": fingerprint,
            "i": int(at * 1000),
        }
        payload = _b64(json.dumps(body, separators=(",", ":")).encode())
        return f"{payload}.{self._mac('session', payload)}"

    def read_session(self, cookie: str, now: float | None = None) -> Session | None:
        """The session the cookie carries, or ``None`` when it is forged, damaged or expired."""
        payload, _, mac = cookie.partition(".")
        if not payload or not hmac.compare_digest(mac.encode(), self._mac("session", payload).encode()):
            return None
        try:
            body = json.loads(_unb64(payload))
            expires = int(body["e"])
            issued_ms = int(body.get("i", (expires - SESSION_SECONDS) * 1000))
            session = Session(str(body["m"]), str(body["s"]), expires, str(body["f"]), issued_ms)
        except (ValueError, KeyError, TypeError):
            return None
        if session.expires < (now if now is not None else time.time()):
            return None
        return session

    def csrf_token(self, session_id: str) -> str:
        return self._mac("csrf", session_id)

    def check_csrf(self, session_id: str, presented: str) -> bool:
        return bool(presented) and hmac.compare_digest(
            presented.encode(), self.csrf_token(session_id).encode()
        )

    def signin_form_token(self, now: float | None = None) -> str:
        """The sign-in form's CSRF token (there is no session yet): a signed issue time."""
        issued = str(int(now if now is not None else time.time()))
        return f"{issued}.{self._mac('signin', issued)}"

    def check_signin_form(self, presented: str, now: float | None = None) -> bool:
        issued, _, mac = presented.partition(".")
        if not issued.isdigit() or not hmac.compare_digest(
            mac.encode(), self._mac("signin", issued).encode()
        ):
            return False
        age = (now if now is not None else time.time()) - int(issued)
        return 0 <= age <= SIGNIN_FORM_SECONDS


class OneTimeToken:
    """The local dashboard's sign-in link token: accepted once, then never again."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self._digest = hashlib.sha256(self.token.encode()).digest()
        self._used = False
        self._lock = threading.Lock()

    def redeem(self, presented: str) -> bool:
        digest = hashlib.sha256(presented.encode()).digest()
        with self._lock:
            if self._used or not hmac.compare_digest(digest, self._digest):
                return False
            self._used = True
            return True
