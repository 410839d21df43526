"""The OTLP/HTTP sender: one daemon thread that encodes and posts what the exporter hands it.

The event loop only queues a job (:meth:`Sender.send`) and awaits its future, so encoding a batch
and a slow or dead collector never hold the loop up. The thread speaks HTTP/1.1 with the
standard library (:mod:`http.client`, one kept-alive connection per collector origin): it costs
no client set-up (an ``httpx`` client builds a TLS context, ~20-100 ms of CPU, even for an
``http://`` collector) and a fraction of a general-purpose client's CPU per post. ``https://``
collectors get the default TLS context (made once); ``HTTP(S)_PROXY`` / ``NO_PROXY`` are honoured
as the SDKs do. The thread is a daemon: a collector that hangs cannot hold the process's exit.
"""

from __future__ import annotations

import http.client
import queue
import threading
import urllib.request
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any
from urllib.parse import urlsplit

__all__ = ["CONNECT_TIMEOUT_S", "READ_TIMEOUT_S", "Sender"]

CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 5.0

Problem = tuple[str, str]
"""``(url, what went wrong)`` of a post that failed."""
Job = tuple[Callable[[], list[tuple[str, bytes]]], "Future[Problem | None]"]


class Sender:
    """``send(encode)`` runs ``encode() -> [(url, body), ...]`` in the thread, posts each body and
    resolves to ``None`` (all answered 2xx) or the first failure (:data:`Problem`, on one line).
    A job cancelled before the thread reached it is dropped."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        own = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        self.headers = {**own, "Content-Type": "application/x-protobuf"}
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._connections: dict[tuple[str, str, int], http.client.HTTPConnection] = {}
        self._tls: Any = None
        self._thread: threading.Thread | None = None

    def send(self, encode: Callable[[], list[tuple[str, bytes]]]) -> Future[Problem | None]:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="fastagent-otlp", daemon=True)
            self._thread.start()
        done: Future[Problem | None] = Future()
        self._jobs.put((encode, done))
        return done

    def close(self) -> None:
        """Stop the thread once the queued jobs are done (it is not waited for)."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            encode, done = job
            if not done.set_running_or_notify_cancel():
                continue  # given up on (a shutdown's deadline)
            problem: Problem | None = None
            try:
                for url, body in encode():
                    failed = self._post(url, body)
                    problem = problem or (None if failed is None else (url, failed))
            except Exception as exc:  # an encoding bug must not kill the thread
                problem = ("(encoding)", f"{type(exc).__name__}: {exc}")
            done.set_result(problem)
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    def _post(self, url: str, body: bytes) -> str | None:
        parts = urlsplit(url)
        key = (parts.scheme, parts.hostname or "", parts.port or 0)
        proxy = _proxy_for(parts.scheme, key[1])
        target = (
            url
            if proxy and parts.scheme == "http"
            else (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        )
        for attempt in (1, 2):  # a kept-alive connection the collector closed: once more, fresh
            connection = self._connections.get(key)
            reused = connection is not None
            try:
                if connection is None:
                    connection = self._connections[key] = self._connect(key, proxy)
                connection.request("POST", target, body, self.headers)
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException) as exc:
                self._drop(key)
                if reused and attempt == 1:
                    continue
                return " ".join(str(exc).split()) or type(exc).__name__
            if response.will_close:
                self._drop(key)
            return None if 200 <= response.status < 300 else f"HTTP {response.status}"
        return None  # not reached: the second attempt returns

    def _drop(self, key: tuple[str, str, int]) -> None:
        connection = self._connections.pop(key, None)
        if connection is not None:
            connection.close()

    def _connect(self, key: tuple[str, str, int], proxy: str | None) -> http.client.HTTPConnection:
        scheme, host, port = key
        connection: http.client.HTTPConnection
        if proxy is not None:  # plain HTTP through the proxy, or a CONNECT tunnel for https
            via = urlsplit(proxy)
            if scheme == "https":
                connection = http.client.HTTPSConnection(
                    via.hostname or "", via.port or 80, timeout=CONNECT_TIMEOUT_S, context=self._context()
                )
                connection.set_tunnel(host, port or 443)
            else:
                connection = http.client.HTTPConnection(
                    via.hostname or "", via.port or 80, timeout=CONNECT_TIMEOUT_S
                )
        elif scheme == "https":
            connection = http.client.HTTPSConnection(
                host, port or None, timeout=CONNECT_TIMEOUT_S, context=self._context()
            )
        else:
            connection = http.client.HTTPConnection(host, port or None, timeout=CONNECT_TIMEOUT_S)
        connection.connect()
        if connection.sock is not None:
            connection.sock.settimeout(READ_TIMEOUT_S)
        return connection

    def _context(self) -> Any:
        if self._tls is None:
            import ssl

            self._tls = ssl.create_default_context()
        return self._tls


def _proxy_for(scheme: str, host: str) -> str | None:
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"
