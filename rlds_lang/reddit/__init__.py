"""Reddit comments: the ILQL paper's single-step reply task (reader, rewards, environment).

``data`` reads the published CSV pair with its index splits and Reddit's own comment dumps; ``rewards``
holds the four reward kinds (toxicity, noised toxicity, real upvotes, an upvote model); ``env`` is the
one-step ``LanguageEnv``. Nothing here imports TensorFlow or a layer above the core.
"""
