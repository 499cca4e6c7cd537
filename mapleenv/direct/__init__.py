"""Direct-simulator env backend: battles run in a Node child, parsed by poke-env's Battle.

Importing this package registers the ``direct`` backend with
:func:`mapleenv.env.register_backend` (``PokemonEnv(backend="direct")``,
``make_vector_env(..., backend="direct")``).
"""

from mapleenv.direct.backend import DirectBackend
from mapleenv.direct.env import DirectPokemonEnv
from mapleenv.direct.host import SimHost, SimHostConnection, SimHostError
from mapleenv.direct.pool import SimHostPool, claim_host, make_direct_vector_env
from mapleenv.direct.session import DirectBattle, order_to_choice
from mapleenv.env import BACKENDS, register_backend

if "direct" not in BACKENDS:
    register_backend("direct", DirectBackend)

__all__ = [
    "DirectBackend",
    "DirectBattle",
    "DirectPokemonEnv",
    "SimHost",
    "SimHostConnection",
    "SimHostError",
    "SimHostPool",
    "claim_host",
    "make_direct_vector_env",
    "order_to_choice",
]
