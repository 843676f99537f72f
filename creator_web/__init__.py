"""The browser tool where people play tasks, judge clip pairs and review episodes, every action recorded as RLDS.

``rlds-lang web --data-dir DIR`` serves it (``creator_web.server``); ``creator_web.app.create_app`` is the
FastAPI application; ``tasks`` (the task registry), ``sessions`` (play), ``judge``, ``review`` and
``storage`` (the data folder) hold the logic; the pages are plain HTML/CSS/JS in ``static/``. Recording
goes through ``loggers.live``.
"""
