"""Real ``pokemon-showdown`` processes: finding the npm package, server configs, the child
process supervisor, and managed servers (:class:`ShowdownServer`, :class:`ServerPool`)."""

from mapleenv.showdown.config import (
    DEFAULT_CONFIG,
    SERVER_LINKS,
    prepare_server_dir,
    render_config,
)
from mapleenv.showdown.formats import check_format, game_type, is_doubles_format
from mapleenv.showdown.package import (
    HOST,
    SETUP_HINT,
    NodeNotFoundError,
    ServerStartError,
    ShowdownError,
    ShowdownNotInstalledError,
    external_server,
    find_node,
    find_showdown,
    free_port,
    port_is_open,
    wait_for_server,
)
from mapleenv.showdown.pool import ServerPool
from mapleenv.showdown.server import ShowdownServer
from mapleenv.showdown.teams import TeamPool, is_team_text, read_teams, team_files, team_pool

__all__ = [
    "DEFAULT_CONFIG",
    "HOST",
    "SETUP_HINT",
    "TeamPool",
    "NodeNotFoundError",
    "ServerPool",
    "ServerStartError",
    "ShowdownError",
    "ShowdownNotInstalledError",
    "ShowdownServer",
    "check_format",
    "game_type",
    "is_doubles_format",
    "external_server",
    "find_node",
    "find_showdown",
    "free_port",
    "is_team_text",
    "port_is_open",
    "prepare_server_dir",
    "SERVER_LINKS",
    "read_teams",
    "render_config",
    "team_files",
    "team_pool",
    "wait_for_server",
]
