"""kbqa as a Model Context Protocol server (`kbqa mcp`): tools and resources over the same engine as the CLI.

    from kbqa.mcp import create_server
    create_server(ServerSettings(store=".kbqa/stores/wikidata-mini")).run("stdio")
"""

from kbqa.mcp.server import create_server, serve

__all__ = ["create_server", "serve"]
