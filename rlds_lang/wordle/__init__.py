"""Wordle as a dm_env language task: the game engine, word lists and knowledge (``engine``, ``game``, ``words``,
``knowledge``), the environment and its schema, scripted policies, recipes and retrofits of shared results
(``env``, ``schema``, ``policies``, ``recipes``, ``retrofit``, ``tweets``) and LMRL-Gym's setting (``lmrl_gym``)."""
