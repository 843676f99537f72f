"""The preference-learning pages: the Wordle reward-model demo (``wordle_demo``), the moving-dot task
(``dot``) and the learning curves of random vs disagreement queries (``curves``).
"""
