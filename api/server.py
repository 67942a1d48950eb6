"""`lagwatch api`: the HTTP server (Starlette routes on uvicorn, both already brought by Streamlit).

Handlers are async and only look things up in the cached snapshot, so the event loop never
waits on the lake; the only blocking step, the very first lake read, runs in a worker thread.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from api import burrow
from api.auth import BearerTokenAuth
from api.cache import Current, SnapshotCache
from api.health import readiness
from api.snapshot import ReadWindow, Snapshot, read_snapshot
from lagwatch import exit_codes
from lagwatch.config import Config
from lagwatch.lake import utc_now
from lagwatch.listen import listen_refused

log = logging.getLogger(__name__)

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
STREAM_PIECE = 1 << 20


def make_cache(config: Config) -> SnapshotCache:
    lake, views = config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path)
    started = utc_now()

    def read() -> Snapshot:
        window = ReadWindow(
            now=utc_now(),
            lookback=dt.timedelta(seconds=config.api.lookback_s),
            commit_window=dt.timedelta(seconds=config.lag.window_s),
            started=started,
        )
        return read_snapshot(lake, views, window, [cluster.name for cluster in config.clusters])

    return SnapshotCache(read, config.api.cache_s, config.api.max_series)


def _json(status: int, body: dict[str, Any]) -> Response:
    return Response(json.dumps(body, separators=(",", ":")), status_code=status, media_type="application/json")


def _streamed(body: bytes, media_type: str) -> Response:
    """A large body in STREAM_PIECE pieces: one large write is slower through asyncio and h11
    (bench/RECORDS.md, "API")."""
    view = memoryview(body)

    async def pieces() -> AsyncIterator[memoryview]:
        for start in range(0, len(view), STREAM_PIECE):
            yield view[start : start + STREAM_PIECE]

    return StreamingResponse(pieces(), media_type=media_type, headers={"Content-Length": str(len(body))})


def build_app(config: Config, cache: SnapshotCache) -> Starlette:
    servers = {cluster.name: [s for s in cluster.bootstrap_servers.split(",") if s] for cluster in config.clusters}
    refresh_s = config.collect.interval_s

    async def current(max_age_s: float | None = None) -> Current | None:
        """The snapshot to answer from: the cached one while young enough (cache.servable), else
        the next read's (after an idle spell the cached one can be minutes old)."""
        got = cache.get()
        if cache.servable(got, max_age_s):
            return got
        if got is not None:
            return await run_in_threadpool(cache.wait_newer)
        try:
            return await run_in_threadpool(cache.wait)
        except RuntimeError:
            return None

    def burrow_route(handler: Callable[..., tuple[int, dict[str, Any]]]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            got = await current()
            if got is None:
                return _json(*burrow.error(request.url.path, 503, f"lake not readable: {cache.last_error}"))
            return _json(*handler(got.snapshot, request.url.path, **request.path_params))

        return endpoint

    async def metrics(request: Request) -> Response:
        got = await current()
        if got is None:
            return PlainTextResponse(f"lake not readable: {cache.last_error}\n", status_code=503)
        if "gzip" in request.headers.get("accept-encoding", ""):
            headers = {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
            return Response(got.metrics_gzip, media_type=METRICS_CONTENT_TYPE, headers=headers)
        return _streamed(got.metrics.text, METRICS_CONTENT_TYPE)

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> Response:
        got = await current(max_age_s=config.api.cache_s)  # a verdict on the lake, not on the cache
        body = readiness(got and got.snapshot, utc_now(), config.api.ready_max_age_s, cache.last_error)
        return JSONResponse(body, status_code=200 if body["ready"] else 503)

    async def burrow_admin(_: Request) -> Response:
        return PlainTextResponse("GOOD")

    async def burrow_ready(_: Request) -> Response:
        got = await current()
        return PlainTextResponse("READY") if got is not None else PlainTextResponse("STARTING", status_code=503)

    def cluster_detail(snap: Any, path: str, cluster: str) -> tuple[int, dict[str, Any]]:
        return burrow.cluster_detail(snap, path, cluster, servers, refresh_s)

    def status(snap: Any, path: str, cluster: str, group: str) -> tuple[int, dict[str, Any]]:
        return burrow.consumer_status(snap, path, cluster, group, show_all=False)

    def lag(snap: Any, path: str, cluster: str, group: str) -> tuple[int, dict[str, Any]]:
        return burrow.consumer_status(snap, path, cluster, group, show_all=True)

    routes = [
        Route("/metrics", metrics),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/burrow/admin", burrow_admin),
        Route("/burrow/admin/ready", burrow_ready),
        Route("/v3/kafka", burrow_route(burrow.cluster_list)),
        Route("/v3/kafka/{cluster}", burrow_route(cluster_detail)),
        Route("/v3/kafka/{cluster}/consumer", burrow_route(burrow.consumer_list)),
        Route("/v3/kafka/{cluster}/consumer/{group}", burrow_route(burrow.consumer_detail)),
        Route("/v3/kafka/{cluster}/consumer/{group}/status", burrow_route(status)),
        Route("/v3/kafka/{cluster}/consumer/{group}/lag", burrow_route(lag)),
        Route("/v3/kafka/{cluster}/topic", burrow_route(burrow.topic_list)),
        Route("/v3/kafka/{cluster}/topic/{topic}", burrow_route(burrow.topic_detail)),
        Route("/v3/kafka/{cluster}/topic/{topic}/consumers", burrow_route(burrow.topic_consumers)),
    ]

    async def not_found(_: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException) and exc.status_code != 404:
            return PlainTextResponse(exc.detail, status_code=exc.status_code)
        return Response(burrow.NOT_FOUND_BODY, status_code=404, media_type="text/plain; charset=utf-8")

    # Read before serving: with auth = "token" and no token in the environment, the server never starts.
    guard = [Middleware(BearerTokenAuth, token=config.api.token())] if config.api.auth == "token" else []
    return Starlette(routes=routes, exception_handlers={HTTPException: not_found}, middleware=guard)


def run(config: Config, args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM (uvicorn handles both and exits cleanly)."""
    import uvicorn

    refused = listen_refused("api.port", config.api.host, config.api.port)
    if refused:
        log.error("lagwatch api: %s", refused.message("api.port"))
        return exit_codes.FAILED
    cache = make_cache(config)
    app = build_app(config, cache)
    cache.get()  # start the first lake read while the server binds
    url = f"http://{config.api.host}:{config.api.port}"
    guard = "bearer token required but for /healthz and /readyz" if config.api.auth == "token" else "no authentication"
    log.info(
        "lagwatch api on %s (/metrics, /v3/kafka, /healthz, /readyz; %s), reading %s", url, guard, config.lake.path
    )
    server = uvicorn.Server(
        uvicorn.Config(app, host=config.api.host, port=config.api.port, log_level="warning", access_log=False)
    )
    try:
        server.run()
    finally:
        cache.close()
    return 0
