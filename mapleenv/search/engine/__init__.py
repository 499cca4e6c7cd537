"""Decision-time search on the native engine (poke-engine): the search host's worlds dumped
as JSON (``mapleenv/js/search/dump.js``), each turned into an engine state (``state``), the
engine's MCTS run on each and its root statistics combined with the policy's prior
(``search``); ``search.engine=poke-engine`` (docs/search.md). Importing this package does
not import the engine: ``available.require_engine`` says how to install it."""
