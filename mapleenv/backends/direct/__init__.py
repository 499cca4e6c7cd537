"""The ``direct`` backend: battles run in Node simulator hosts, parsed by poke-env's ``Battle``.

Importing this package registers the ``direct`` backend with
:func:`mapleenv.backends.register_backend` (``PokemonEnv(backend="direct")``,
``make_vector_env(..., backend="direct")``).
"""

from mapleenv.backends import BACKENDS, register_backend
from mapleenv.backends.direct.backend import DirectBackend
from mapleenv.backends.direct.host import SimHost, SimHostConnection, SimHostError
from mapleenv.backends.direct.pool import SimHostPool, claim_host
from mapleenv.backends.direct.session import DirectBattle, order_to_choice

if "direct" not in BACKENDS:
    register_backend("direct", DirectBackend.from_spec, takes_spec=True)

__all__ = [
    "DirectBackend",
    "DirectBattle",
    "SimHost",
    "SimHostConnection",
    "SimHostError",
    "SimHostPool",
    "claim_host",
    "order_to_choice",
]
