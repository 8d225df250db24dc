"""The HTTP face of kbqa: the /v1 API, the SPARQL 1.1 Protocol endpoint and a web page (`kbqa serve`).

    from kbqa.server import ServerSettings, create_app
    app = create_app(ServerSettings(store=".kbqa/stores/wikidata-mini"))   # an ASGI app for uvicorn

Nothing else in kbqa imports this package: it sits on top of the Python API.
"""

from kbqa.server.app import create_app
from kbqa.settings import ServerSettings

__all__ = ["ServerSettings", "create_app"]
