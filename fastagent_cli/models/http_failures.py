"""Transport failures that retrying cannot fix, told apart from the transient ones.

A model request that fails before any answer is retried with backoff (a reset, a timeout, a 5xx).
These are not, because the next attempt would fail the same way; each becomes one line that names
the URL and the fix, with ``retryable=False``:

* the provider's host name does not resolve (a typo in ``baseUrl``, no network or DNS);
* its TLS certificate is not trusted (a private CA), has expired, or is not valid for the name in
  ``baseUrl``;
* the TLS handshake fails on the protocol itself (an ``https://`` URL on a plain-HTTP port, a
  server offering no TLS version or cipher in common);
* a connection refused on this machine (nothing listens there: is the local server running?).

What stays transient: a connection refused by a remote host, a TLS handshake cut short by the
other end (``EOF``), every timeout, a stream interrupted before its first text.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import ssl
from collections.abc import Iterator

import httpx

from fastagent_cli.errors import ProviderError, one_line

__all__ = ["chain", "lasting_failure", "on_this_machine"]

_TRUST_FIX = (
    "if the server uses a private CA, set caFile for the provider in models.json "
    "(or SSL_CERT_FILE to a CA bundle that includes it)"
)


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and its causes (httpx wraps the socket's error twice)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return
        yield seen
        seen = seen.__cause__ or seen.__context__


def on_this_machine(url: str) -> bool:
    host = httpx.URL(url).host
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback or host in ("0.0.0.0", "::")
    except ValueError:
        return False


def _not_listening(provider: str, url: str) -> ProviderError:
    which = "Ollama (`ollama serve`)" if provider == "ollama" else "the model server"
    return ProviderError(
        f"{provider}: nothing is listening at {url} (connection refused): is {which} running? Start it, "
        "or point the provider's baseUrl in models.json at the server",
        retryable=False,
    )


def _certificate(provider: str, url: str, exc: ssl.SSLCertVerificationError) -> ProviderError:
    host = httpx.URL(url).host
    reason = one_line(str(exc.verify_message or exc.reason or exc))
    code = exc.verify_code
    if code == 10:  # X509_V_ERR_CERT_HAS_EXPIRED
        fix = "the server's certificate must be renewed (or this machine's clock is wrong)"
        what = "has expired"
    elif code == 62 or "hostname mismatch" in reason.lower() or "doesn't match" in reason.lower():
        fix = "use the host name the certificate was issued for in the provider's baseUrl"
        what = "is not valid for that name"
    elif code == 9:  # X509_V_ERR_CERT_NOT_YET_VALID
        fix = "check this machine's clock"
        what = "is not valid yet"
    else:
        fix = _TRUST_FIX
        what = "is not trusted"
    return ProviderError(
        f"{provider}: the TLS certificate of {host} {what} ({reason}; {url}): {fix}", retryable=False
    )


def _tls_protocol(provider: str, url: str, exc: ssl.SSLError) -> ProviderError:
    reason = one_line(exc.reason or str(exc)) if isinstance(exc.reason, str) else one_line(str(exc))
    hint = (
        "the server does not speak TLS there: is it plain http://?"
        if "WRONG_VERSION_NUMBER" in str(exc) or "record layer failure" in str(exc).lower()
        else "the server and this client share no TLS version or cipher; check the provider's baseUrl"
    )
    return ProviderError(f"{provider}: TLS handshake with {url} failed ({reason}): {hint}", retryable=False)


def lasting_failure(provider: str, url: str, exc: BaseException) -> ProviderError | None:
    """The one-line, not retryable error for a connect failure that a retry cannot fix, or
    ``None`` when ``exc`` is worth retrying."""
    if not isinstance(exc, httpx.ConnectError):
        return None
    for cause in chain(exc):
        if isinstance(cause, socket.gaierror):
            host = httpx.URL(url).host
            return ProviderError(
                f"{provider}: cannot resolve the host name {host!r} ({url}: "
                f"{one_line(cause.strerror or str(cause))}): check the provider's baseUrl in models.json, "
                "or this machine's network and DNS",
                retryable=False,
            )
        if isinstance(cause, ssl.SSLCertVerificationError):
            return _certificate(provider, url, cause)
        if isinstance(cause, ssl.SSLEOFError | ssl.SSLZeroReturnError | ssl.SSLSyscallError):
            return None  # the other end went away mid-handshake: transient
        if isinstance(cause, ssl.SSLError):
            return _tls_protocol(provider, url, cause)
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
            return _not_listening(provider, url) if on_this_machine(url) else None
    return None
