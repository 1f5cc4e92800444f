"""GET /docs (Swagger UI) and /redoc (ReDoc) from assets shipped in a Python package, no CDN.

The JavaScript and CSS come from the `fastapi-offline` wheel's static folder, mounted at
`/docs-assets`; every URL the two pages name is relative to this server, so the docs work on a
machine without internet. Swagger UI's online spec validator is turned off for the same reason.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/docs-assets"
ASSETS_DIR = Path(fastapi_offline.__file__).resolve().parent / "static"
# validatorUrl None: Swagger UI would otherwise send the schema to an online validator for its badge.
SWAGGER_PARAMETERS = {"validatorUrl": None, "persistAuthorization": False}
# ReDoc's sidebar credit loads its logo from a CDN; the served bundle names the local favicon instead.
REDOC_BUNDLE = "redoc.standalone.js"
REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
# Both pages load from this server only; their own inline bootstrap script and styles are allowed.
DOCS_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; "
            "frame-ancestors 'none'; base-uri 'none'")


def _offline(response: HTMLResponse) -> HTMLResponse:
    response.headers["Content-Security-Policy"] = DOCS_CSP
    return response


def install(app: FastAPI, *, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Mount the bundled assets and add the two pages (hidden from the OpenAPI schema)."""
    openapi_url = app.openapi_url or "/openapi.json"
    redoc_bundle: list[bytes] = []

    @app.get(f"{ASSETS_URL}/{REDOC_BUNDLE}", include_in_schema=False)
    async def redoc_js() -> Response:  # before the mount, so it wins
        if not redoc_bundle:
            text = (ASSETS_DIR / REDOC_BUNDLE).read_text(encoding="utf-8")
            redoc_bundle.append(text.replace(REDOC_CDN_LOGO, f"{ASSETS_URL}/favicon.png").encode("utf-8"))
        return Response(redoc_bundle[0], media_type="text/javascript; charset=utf-8")

    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS_DIR), name="docs-assets")

    @app.get(docs_url, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _offline(get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}", title=f"{app.title} - API docs",
            swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            swagger_ui_parameters={**(app.swagger_ui_parameters or {}), **SWAGGER_PARAMETERS}))

    @app.get(redoc_url, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _offline(get_redoc_html(openapi_url=f"{root}{openapi_url}", title=f"{app.title} - API reference",
                              redoc_js_url=f"{root}{ASSETS_URL}/redoc.standalone.js",
                              redoc_favicon_url=f"{root}{ASSETS_URL}/favicon.png", with_google_fonts=False))
