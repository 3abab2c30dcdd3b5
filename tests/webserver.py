"""A real ``patchsim serve`` app on 127.0.0.1 for the web tests: a uvicorn server on a free
port, in a daemon thread, with small clients for the JSON API (the API tests) and its base
URL (the browser tests)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pytest

uvicorn = pytest.importorskip("uvicorn")


class Server:
    """A uvicorn server for ``app`` on a free port of 127.0.0.1, in a daemon thread."""

    def __init__(self, app) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """One request, with ``path`` sent byte for byte as given (no client-side clean-up
        of ``..`` or ``//``): status, headers (lower-case names) and body."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            own_host = any(k.lower() == "host" for k in headers or {})
            conn.putrequest(method, path, skip_accept_encoding=True, skip_host=own_host)
            for k, v in (headers or {}).items():
                conn.putheader(k, v)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def get(self, path: str, **kw) -> tuple[int, dict]:
        status, _, body = self.request("GET", path, **kw)
        return status, json.loads(body)

    def post(self, path: str, data: object, content_type: str = "application/json"
             ) -> tuple[int, dict]:
        raw = data if isinstance(data, bytes) else json.dumps(data).encode()
        status, _, body = self.request("POST", path, raw, {"Content-Type": content_type})
        return status, json.loads(body)

    def api(self, path: str) -> dict:
        """The JSON of a GET that must succeed."""
        status, data = self.get(path)
        assert status == 200, (path, status, data)
        return data
