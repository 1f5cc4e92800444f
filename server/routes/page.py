"""GET /: the web page (one static HTML file, a small script and a style sheet under server/static).

The page calls the same /v1 API as any client, with the API key the reader typed (kept in the
browser's sessionStorage and sent as `Authorization: Bearer`, never in a URL). It names no
external URL, and the Content-Security-Policy keeps it that way: scripts, styles, images and
requests come from this server only.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parents[1] / "static"
STATIC_URL = "/static"
PAGE_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def install(app: FastAPI) -> None:
    app.mount(STATIC_URL, StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:  # browsers and tools that ask before reading the page's <link>
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")
