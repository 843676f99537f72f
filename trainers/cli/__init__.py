"""The ``rlds-lang`` command line: ``main`` builds the parser; ``train``, ``results``, ``preferences`` and
``tasks`` hold the commands of each group. The only place with argument parsers and command functions.
"""
