"""Doubles encoders: ``doubles_basic`` (basic.py), ``doubles_calc`` (calc.py) and
``doubles_entities`` (entities.py); registered by :mod:`mapleenv.encoders` and
:mod:`mapleenv.encoders.builtin`."""
