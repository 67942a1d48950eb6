"""A tiny HTTP server for Prometheus exposition text rendered on each request.

The demo's simulated broker JMX serves its counters this way, and the test harness serves
exporter text through the same class, so the scrape path the collectors meet is one code path.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTENT_TYPE = "text/plain; version=0.0.4"


class MetricsTextServer:
    """Serves `render()` at /metrics (404 elsewhere) on a daemon thread until `close()`."""

    def __init__(
        self, render: Callable[[], str], port: int = 0, *, host: str = "127.0.0.1", name: str = "metrics-text"
    ) -> None:
        self._http = ThreadingHTTPServer((host, port), _handler_for(render))
        self._http.daemon_threads = True
        self.port = self._http.server_address[1]
        self.url = f"http://{host}:{self.port}/metrics"
        threading.Thread(target=self._http.serve_forever, daemon=True, name=name).start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


def _handler_for(render: Callable[[], str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path.split("?", 1)[0] == "/metrics"
            body = render().encode() if found else b"not found\n"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    return Handler
