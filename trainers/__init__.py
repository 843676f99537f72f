"""PyTorch trainers for RLDS language datasets, in layers that import one way:
``core`` <- ``evaluation``, ``algorithms`` <- ``experiments`` <- ``cli``.

``core`` is the shared library (configs, models, the training loop, logs, checkpoints, playing policies) and names
no algorithm; ``evaluation`` plays any policy and holds the statistics of every table; ``algorithms`` has one
folder or module per algorithm and the registry that trains and loads them by name; ``tasks`` holds the task
models that are not agents (the Visual Dialogue guesser, the Reddit upvote model); ``experiments`` produces the
results pages of ``docs/``; ``cli`` is the ``rlds-lang`` command line and the only home of argument parsers.
"""
