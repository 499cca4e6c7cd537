"""Singles encoders: ``singles_basic`` (basic.py), ``singles_entities`` (entities.py) and
``singles_sets`` (sets.py); registered by :mod:`mapleenv.encoders` and
:mod:`mapleenv.encoders.builtin`."""
