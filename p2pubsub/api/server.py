"""Binding the API to a socket, for a node that embeds it: ``server = await start_api(app, host, port)``.

Port 0 picks a free port; ``server.port`` and ``server.url`` report what was bound (also shown under ``http`` in
``GET /v1/node``). ``await server.close()`` stops listening, answers open long polls and SSE streams at once and
waits at most ``shutdown_timeout`` seconds for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from .app import HTTP_ADDRESSES


@dataclass(slots=True)
class ApiServer:
    runner: web.AppRunner
    host: str
    port: int  # the bound port (the first socket's, when the host resolved to several)
    addresses: list[str]  # every bound "host:port"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def close(self) -> None:
        await self.runner.cleanup()


async def start_api(
    app: web.Application,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    shutdown_timeout: float = 5.0,
    access_log: bool = False,
) -> ApiServer:
    """Serve ``app`` on ``host:port`` (0: any free port) until ``close()``."""
    kwargs = {} if access_log else {"access_log": None}
    runner = web.AppRunner(app, shutdown_timeout=shutdown_timeout, **kwargs)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    addresses = [f"{a[0]}:{a[1]}" if ":" not in a[0] else f"[{a[0]}]:{a[1]}" for a in runner.addresses]
    if HTTP_ADDRESSES in app:  # shown by GET /v1/node
        app[HTTP_ADDRESSES].extend(addresses)
    return ApiServer(runner, host, runner.addresses[0][1], addresses)


__all__ = ["ApiServer", "start_api"]
