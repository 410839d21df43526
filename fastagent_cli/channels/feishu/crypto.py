"""Feishu/Lark webhook security math (features O3, O4). Pure.

With an Encrypt Key set in the console, an event arrives as ``{"encrypt": "<base64>"}``: AES-256-CBC
with the key ``SHA-256(encrypt key)``, the first 16 bytes of the decoded payload being the IV, PKCS#7
padding. It is signed: ``X-Lark-Signature = hex(SHA-256(timestamp + nonce + encrypt key + raw
body))`` with ``X-Lark-Request-Timestamp`` and ``X-Lark-Request-Nonce``, over the verbatim body.
Comparisons are constant time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

__all__ = [
    "DecryptError",
    "decrypt_event",
    "encrypt_event",
    "event_signature",
    "secrets_match",
    "verify_signature",
]


class DecryptError(ValueError):
    """The payload is not a decryptable event (malformed, wrong key, bad padding)."""


def secrets_match(given: str | None, expected: str) -> bool:
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))


def event_signature(encrypt_key: str, timestamp: str, nonce: str, body: bytes) -> str:
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode("utf-8") + body).hexdigest()


def verify_signature(encrypt_key: str, timestamp: str, nonce: str, signature: str, body: bytes) -> bool:
    return secrets_match(signature.lower(), event_signature(encrypt_key, timestamp, nonce, body))


def _cipher(encrypt_key: str, iv: bytes) -> object:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    return Cipher(algorithms.AES(hashlib.sha256(encrypt_key.encode("utf-8")).digest()), modes.CBC(iv))


def decrypt_event(encrypt_key: str, encrypted: str) -> str:
    """The plaintext (JSON text) of an ``encrypt`` field. Raises :class:`DecryptError`."""
    from cryptography.hazmat.primitives import padding

    try:
        raw = base64.b64decode(encrypted, validate=True)
    except (binascii.Error, ValueError):
        raise DecryptError("not base64") from None
    if len(raw) <= 16 or (len(raw) - 16) % 16:
        raise DecryptError("too short, or not whole AES blocks")
    decryptor = _cipher(encrypt_key, raw[:16]).decryptor()  # type: ignore[attr-defined]
    padded = decryptor.update(raw[16:]) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    try:
        plain = unpadder.update(padded) + unpadder.finalize()
        return str(plain.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise DecryptError("bad padding or not UTF-8 (a wrong encrypt key?)") from None


def encrypt_event(encrypt_key: str, plaintext: str, iv: bytes) -> str:
    """What the platform sends for ``plaintext`` (tests and fakes)."""
    from cryptography.hazmat.primitives import padding

    padder = padding.PKCS7(128).padder()
    padded = padder.update(plaintext.encode("utf-8")) + padder.finalize()
    encryptor = _cipher(encrypt_key, iv).encryptor()  # type: ignore[attr-defined]
    return base64.b64encode(iv + encryptor.update(padded) + encryptor.finalize()).decode("ascii")
