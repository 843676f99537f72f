"""Dataset cards: what the catalog says of each dataset beyond its builder's code, and the manual-data check.

Shared by the TFDS builders (``builders/<name>/``) and the command line (``rlds-lang datasets``, ``rlds-lang
build``); like ``loggers.tfds_examples`` it lives here because the builders are folders that ``tfds build
builders/<name>`` also imports on their own, outside any package. No TensorFlow.

Each dataset folder holds a ``CARD.toml`` beside its ``README.md`` and ``CITATIONS.bib``::

    summary = "one line for `rlds-lang datasets list`"
    source = "where the data comes from"
    licence = "the terms of the data"

    [sizes]                      # config -> how many episodes it holds
    expert = "2,315 games: one per answer of the official list"

    [manual]                     # only when a config reads files you fetch yourself
    configs = ["manual_dir"]     # which configs (leave it out: every config)
    what = "what to download"
    where = ["https://..."]      # where from
    task = "wordle"              # for folders of logs: the task they must be recorded from

    [[manual.layouts]]           # the manual folder fits when every pattern of one layout matches
    name = "published"
    files = ["comments_positive.csv", "*.zst|*.ndjson"]   # globs, relative; "|" separates alternatives
    configs = ["toxicity"]       # optional: the configs this layout serves
    dummy = "dummy_data/published"   # the shipped dummy data in this layout

``read_card(folder)`` reads it; ``manual_problem`` says what a manual folder lacks (``None`` when it fits) without
TensorFlow, so ``rlds-lang build`` checks a folder before starting ``tfds build``, and ``manual_folder`` is the
builders' own check at the start of ``_split_generators``, before Beam starts: each raises ``ManualDataError``
naming what to download, where from, where to put it and how to try the shipped dummy data.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import tomllib
from typing import Any, Mapping

#: the card's file name in a dataset folder.
CARD_FILE = "CARD.toml"


class ManualDataError(FileNotFoundError):
    """A config's manual folder is missing or lacks files; the message says what to fetch, where to put it and how
    to try the shipped dummy data."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """One arrangement of the manual folder that a config can read."""

    name: str
    files: tuple[str, ...]
    configs: tuple[str, ...] = ()
    dummy: str = ""

    def serves(self, config: str) -> bool:
        """Whether this layout is one that ``config`` reads."""
        return not self.configs or config in self.configs

    def lacking(self, folder: str) -> list[str]:
        """The patterns of this layout that match nothing in ``folder``."""
        return [pattern for pattern in self.files
                if not any(glob.glob(os.path.join(glob.escape(folder), alternative), recursive=True)
                           for alternative in pattern.split("|"))]


@dataclasses.dataclass(frozen=True)
class ManualData:
    """What a dataset's manual configs read: what to fetch, from where, and the layouts it may take."""

    what: str
    where: tuple[str, ...] = ()
    configs: tuple[str, ...] = ()
    task: str = ""
    layouts: tuple[Layout, ...] = ()

    def needed_by(self, config: str) -> bool:
        """Whether ``config`` reads a manual folder."""
        return not self.configs or config in self.configs

    def layouts_for(self, config: str) -> list[Layout]:
        """The layouts ``config`` reads."""
        return [layout for layout in self.layouts if layout.serves(config)]


@dataclasses.dataclass(frozen=True)
class DatasetCard:
    """A dataset's card (see the module docstring); ``folder`` is its dataset folder."""

    name: str
    folder: str
    summary: str
    source: str
    licence: str
    sizes: Mapping[str, str]
    manual: ManualData | None = None

    def dummy_folder(self, config: str, layout: str | None = None) -> str | None:
        """The shipped dummy data that ``config`` reads as its manual folder, in its first layout that has some, or
        in the layout named ``layout`` (``None`` when the config needs no manual folder or no such dummy exists)."""
        if self.manual is None or not self.manual.needed_by(config):
            return None
        for candidate in self.manual.layouts_for(config):
            if candidate.dummy and layout in (None, candidate.name):
                return os.path.join(self.folder, candidate.dummy)
        return None

    def instructions(self) -> str:
        """The manual-download instructions (TFDS's ``MANUAL_DOWNLOAD_INSTRUCTIONS``) in one paragraph."""
        if self.manual is None:
            return ""
        manual = self.manual
        scope = f"Configs {', '.join(manual.configs)} read" if manual.configs else "Every config reads"
        text = f"{scope} files you fetch yourself: {manual.what}"
        if manual.where:
            text += f" (from {', '.join(manual.where)})"
        layouts = "; or ".join(_layout_text(layout) for layout in manual.layouts)
        return (f"{text}. Put them in the manual folder (--manual_dir, default <data_dir>/downloads/manual): "
                f"{layouts}. Try the shipped dummy data first: rlds-lang build {self.name} --config CONFIG "
                "--data-dir DATA_DIR --dummy-data.")


def _layout_text(layout: Layout) -> str:
    files = ", ".join(f.replace("|", " or ") for f in layout.files)
    return f"{files}" + (f" (configs {', '.join(layout.configs)})" if layout.configs else "")


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: expected a string or a list of strings, got {value!r}")
    return tuple(value)


def read_card(folder: str | os.PathLike) -> DatasetCard:
    """The card of the dataset folder ``folder`` (its name is the folder's); a missing field names the file."""
    folder = os.fspath(folder)
    path = os.path.join(folder, CARD_FILE)
    with open(path, "rb") as f:
        data = tomllib.load(f)
    missing = [key for key in ("summary", "source", "licence", "sizes") if key not in data]
    if missing:
        raise ValueError(f"{path}: missing {missing}")
    manual = None
    if "manual" in data:
        raw = data["manual"]
        layouts = tuple(Layout(name=entry.get("name", f"layout {i + 1}"),
                               files=_strings(entry["files"], f"{path}: manual.layouts[{i}].files"),
                               configs=_strings(entry.get("configs", []), f"{path}: manual.layouts[{i}].configs"),
                               dummy=entry.get("dummy", ""))
                        for i, entry in enumerate(raw.get("layouts", [])))
        manual = ManualData(what=raw["what"], where=_strings(raw.get("where", []), f"{path}: manual.where"),
                            configs=_strings(raw.get("configs", []), f"{path}: manual.configs"),
                            task=raw.get("task", ""), layouts=layouts)
    return DatasetCard(name=os.path.basename(os.path.normpath(folder)), folder=folder, summary=data["summary"],
                       source=data["source"], licence=data["licence"], sizes=dict(data["sizes"]), manual=manual)


def manual_problem(card: DatasetCard, config: str, folder: str | os.PathLike) -> str | None:
    """What the manual folder ``folder`` lacks for ``card``'s ``config`` (``None`` when it fits, or when the config
    reads no manual folder)."""
    manual = card.manual
    if manual is None or not manual.needed_by(config):
        return None
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        return f"{folder} does not exist"
    if not os.listdir(folder):
        return f"{folder} is empty"
    layouts = manual.layouts_for(config)
    lacking = [(layout, layout.lacking(folder)) for layout in layouts]
    if not layouts or any(not missing for _, missing in lacking):
        return None
    return f"{folder} lacks " + "; or for the layout ".join(
        f"{', '.join(m.replace('|', ' or ') for m in missing)}" + (f" ({layout.name})" if len(layouts) > 1 else "")
        for layout, missing in lacking)


def manual_data_message(card: DatasetCard, config: str, problem: str, data_dir: str = "DATA_DIR") -> str:
    """The ``ManualDataError`` text: the problem, what to fetch and from where, where to put it, the dummy data."""
    manual = card.manual
    if manual is None:
        raise ValueError(f"{card.name}: its card declares no manual data")
    lines = [f"{card.name}{'/' + config if config else ''} reads files you fetch yourself, and {problem}.",
             f"What: {manual.what}" + (f" (from {', '.join(manual.where)})." if manual.where else ".")]
    layouts = manual.layouts_for(config)
    if layouts:
        lines.append("Put in the manual folder: " + "; or ".join(_layout_text(layout) for layout in layouts) + ".")
    lines.append("The manual folder is --manual-dir (tfds build: --manual_dir), by default <data_dir>/downloads/manual.")
    if card.dummy_folder(config):
        lines.append(f"Try the shipped dummy data first: rlds-lang build {card.name}"
                     f"{' --config ' + config if config else ''} --data-dir {data_dir} --dummy-data")
    return "\n".join(lines)


def manual_folder(dl_manager: Any, card: DatasetCard, config: str) -> str:
    """A builder's manual folder for ``config``, checked against the card before anything is generated; a missing,
    empty or incomplete folder is a ``ManualDataError`` (``manual_data_message``)."""
    try:
        folder = os.fspath(dl_manager.manual_dir)
    except AssertionError:  # TFDS's word for a manual folder that is missing or empty
        folder = os.fspath(getattr(dl_manager, "_manual_dir", None) or "")
        problem = (manual_problem(card, config, folder) if folder else None) or "no manual folder was given"
        raise ManualDataError(manual_data_message(card, config, problem)) from None
    problem = manual_problem(card, config, folder)
    if problem:
        raise ManualDataError(manual_data_message(card, config, problem))
    return folder


__all__ = ["CARD_FILE", "DatasetCard", "Layout", "ManualData", "ManualDataError", "manual_data_message",
           "manual_folder", "manual_problem", "read_card"]
