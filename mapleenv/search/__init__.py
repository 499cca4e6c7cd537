"""Decision-time search over the pinned simulator: worlds sampled from one seat's view, a
one-turn simultaneous-move game per world, its scores combined with the policy's prior
(docs/search.md)."""

from mapleenv.search.decide import (
    Decision,
    SearchConfig,
    Searcher,
    SearchStats,
    host_settings,
    host_view,
)
from mapleenv.search.engine.available import EngineMissing, require_engine, require_engine_for
from mapleenv.search.host import SearchHost, SearchHostError, SearchRefused
from mapleenv.search.opponent_model import PolicyOpponentModel, make_opponent_model
from mapleenv.search.options import split_search_options
from mapleenv.search.teacher import SearchTeacherConfig, search_target
from mapleenv.search.view import battle_view, decision_view, readable_view

__all__ = [
    "Decision",
    "EngineMissing",
    "PolicyOpponentModel",
    "SearchConfig",
    "SearchHost",
    "SearchHostError",
    "SearchRefused",
    "SearchStats",
    "SearchTeacherConfig",
    "Searcher",
    "battle_view",
    "decision_view",
    "readable_view",
    "host_settings",
    "host_view",
    "make_opponent_model",
    "require_engine",
    "require_engine_for",
    "search_target",
    "split_search_options",
]
