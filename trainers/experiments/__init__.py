"""The runs behind the results pages of ``docs/``: each module fixes its settings as constants and writes its
page; nothing in the library imports them. ``common`` holds what the pages share.
"""
