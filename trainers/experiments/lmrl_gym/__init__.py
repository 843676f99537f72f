"""The LMRL-Gym Wordle table (``docs/lmrl_gym.md``): the setting (``setting``), the linear reference
(``linear``), the training and evaluation of its rows (``run``) and the page (``document``).
"""
