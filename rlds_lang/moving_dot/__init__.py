"""A small non-text ``dm_env`` task: a dot on a grid image (issue 15's moving-dot demonstration)."""
