"""Visual Dialogue: the ILQL paper's questioner task (readers, rewards and modes, environment, backends).

``data`` streams the published files (VisDial v0.5 / v1.0 JSON, the image-feature HDF5, the reward
caches); ``rewards`` holds the percentile / distance rewards, the yes/no penalties and the three modes;
``env`` is the text environment over a ``Backend`` (cached data, a local answerer + guesser, or the
published HTTP protocol). Nothing here imports TensorFlow or a layer above the core.
"""
