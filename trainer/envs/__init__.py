"""The trainer's side of the environments: building the vector env a run trains on
(:mod:`~trainer.envs.vector`), reading its observations (:mod:`~trainer.envs.spaces`) and
its episode ``info`` (:mod:`~trainer.envs.episodes`)."""
