"""Bearer tokens: shown once, stored as a lookup prefix plus a SHA-256 digest.

A token reads `<kind>_<random>`; its first 12 characters are the indexed lookup prefix and
the digest of the whole token is compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

AGENT_TOKEN_KIND = "agt"
PERSONAL_TOKEN_KIND = "pat"
PREFIX_LENGTH = 12


@dataclass(frozen=True)
class NewToken:
    plaintext: str
    prefix: str
    digest: str


def token_digest(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def token_generate(kind: str) -> NewToken:
    plaintext = f"{kind}_{secrets.token_urlsafe(32)}"
    return NewToken(
        plaintext=plaintext, prefix=plaintext[:PREFIX_LENGTH], digest=token_digest(plaintext)
    )


def token_matches(plaintext: str, digest: str) -> bool:
    return hmac.compare_digest(token_digest(plaintext), digest)
