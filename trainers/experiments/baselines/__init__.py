"""``rlds-lang results baselines``: every agent of the ILQL code's comparison (BC, %BC, ILQL, CQL, DT, ψ,
utterance ILQL, CHAI) on the same seeded games of two Wordle settings, written to ``docs/baselines.md``.

``settings`` names the two settings and their rows, ``run`` trains (resumably) and plays them, ``document``
writes the page from the results, computing every verdict."""
