"""Plays policies on seeded games and summarises them: Wordle (``wordle``), Reddit (``reddit``), Visual Dialogue
(``visdial``), value diagnostics (``diagnostics``) and the statistics behind every table and verdict (``stats``).
"""
