"""Two-role Wordle: a proposer offers guesses and a checker accepts or sends them back (``env``), with scripted
roles of several strengths (``policies``); the multi-agent task of MALT (``trainers.algorithms.malt.team``)."""
