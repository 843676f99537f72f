"""A small non-text ``dm_env`` task: a dot on a grid image (the preference-learning demonstrations' pixel task)."""
