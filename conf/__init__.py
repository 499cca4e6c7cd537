"""Maple's Hydra configs, importable as the package ``maple_conf`` (pyproject.toml maps this
folder to that name, in the wheel and in an editable install), which the CLIs name as
``pkg://maple_conf`` (:mod:`trainer.apps.hydra_app`). Holds no code."""
