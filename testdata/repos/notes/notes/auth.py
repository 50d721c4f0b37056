"""API tokens: issuing, hashing and checking them."""

import hashlib
import hmac
import secrets

TOKEN_BYTES = 32


def issue_token():
    """A new random API token, shown to the user once."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token, salt):
    return hashlib.pbkdf2_hmac("sha256", token.encode(), salt, 100_000).hex()


def verify_token(token, salt, expected_hash):
    """Constant-time comparison of a presented token against the stored hash."""
    return hmac.compare_digest(hash_token(token, salt), expected_hash)


class RateLimiter:
    """Allows at most `rate` requests per client in each window of seconds."""

    def __init__(self, rate, window=60):
        self.rate = rate
        self.window = window
        self.counts = {}

    def allow(self, client, now):
        start, n = self.counts.get(client, (now, 0))
        if now - start >= self.window:
            start, n = now, 0
        if n >= self.rate:
            return False
        self.counts[client] = (start, n + 1)
        return True
