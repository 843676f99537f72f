"""A single-step text-continuation task shaped like lm-human-preferences' sentiment task: the observation is
the first words of a corpus sentence, the action its continuation, the reward a scorer's value (VADER's
compound sentiment by default). ``corpus`` holds the shipped, BSD-licensed corpus and its prompts, ``env`` the
environment and the corpus policy, ``scorer`` the lexicon sentiment scorer."""
