"""``rlds-lang datasets list|show|dummy|docs``: the catalog of datasets.

The catalog is read from one source: each dataset folder of ``rlds_lang_datasets`` (``builders/`` in a checkout)
with its builder class (configs, version, the features of each config: what an episode holds), ``CARD.toml``
(summary, sizes, source, licence, manual data: ``loggers.dataset_cards``), ``README.md`` and ``CITATIONS.bib``.
``datasets list`` prints one line per dataset, ``datasets show NAME`` its whole card, ``datasets dummy NAME --out
DIR`` copies the dummy data it ships (a manual folder to try the tools on, from an installed copy as from a
checkout), and ``datasets docs --out docs/datasets`` writes the catalog as the documentation site's pages (an index
and a page per dataset; the tests check that the committed pages are current).

The datasets package is imported by name (``rlds_lang_datasets``), as ``tfds build --imports`` does: the one
sideways import of the command line besides the browser tool's (``tests/test_layering.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np

from loggers.dataset_cards import CARD_FILE, DatasetCard, read_card

#: the config label of a builder without configs (``preferences``).
NO_CONFIG = "default"
#: the RLDS step fields in the order the catalog shows them (step metadata follows).
STEP_ORDER = ("observation", "action", "reward", "discount", "is_first", "is_last", "is_terminal")


def datasets_folder() -> Path:
    """The folder of the installed datasets package (``rlds_lang_datasets``, or ``builders/`` in a checkout), found
    without importing it (no TensorFlow)."""
    spec = importlib.util.find_spec("rlds_lang_datasets")
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    spec = importlib.util.find_spec("builders")  # a checkout: rlds_lang_datasets.py names the builders package
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the datasets package (rlds_lang_datasets) is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def cards() -> dict[str, DatasetCard]:
    """Every dataset's card, by name (sorted)."""
    root = datasets_folder()
    return {path.parent.name: read_card(path.parent) for path in sorted(root.glob(f"*/{CARD_FILE}"))}


def card_of(name: str) -> DatasetCard:
    """The card of dataset ``name``; an unknown name is a ``SystemExit`` listing the known ones."""
    known = cards()
    if name not in known:
        raise SystemExit(f"rlds-lang: no dataset {name!r}; the datasets are {', '.join(known)} "
                         "(rlds-lang datasets list)")
    return known[name]


def config_names(card: DatasetCard) -> list[str]:
    """The configs of a dataset as its card lists them (``[NO_CONFIG]`` for a builder without configs)."""
    return list(card.sizes)


# -- the catalog ---------------------------------------------------------------------------------------------------

def _builders() -> dict[str, Any]:
    import rlds_lang_datasets

    return rlds_lang_datasets.BUILDERS


def feature_text(feature: Any) -> str:
    """A TFDS feature in a few words: ``text``, ``int8[5]``, ``{text: text, turn: int32}``, ``steps[...]``."""
    import tensorflow_datasets as tfds

    if isinstance(feature, tfds.features.Dataset):
        return "a sequence of " + feature_text(feature.feature)
    if isinstance(feature, tfds.features.FeaturesDict):
        return "{" + ", ".join(f"{k}: {feature_text(v)}" for k, v in feature.items()) + "}"
    if isinstance(feature, tfds.features.Text):
        return "text"
    shape = tuple(feature.shape)
    dtype = "text" if np.dtype(feature.np_dtype) == object else np.dtype(feature.np_dtype).name
    return dtype + (f"[{', '.join('?' if n is None else str(n) for n in shape)}]" if shape else "")


def episode_fields(name: str, config: str) -> dict[str, str]:
    """``{field: description}`` of what an episode (an example) of ``name/config`` holds, from its builder's
    features; the ``steps`` of an RLDS dataset come first, one entry per step field."""
    import tempfile

    import tensorflow_datasets as tfds

    builder_cls = _builders()[name]
    with tempfile.TemporaryDirectory() as data_dir:
        features = builder_cls(config=None if config == NO_CONFIG else config, data_dir=data_dir).info.features
    out: dict[str, str] = {}
    steps = features["steps"] if "steps" in features else None
    if isinstance(steps, tfds.features.Dataset):
        order = {key: i for i, key in enumerate(STEP_ORDER)}
        for key in sorted(steps.feature, key=lambda k: (order.get(k, len(order)), list(steps.feature).index(k))):
            out[f"steps/{key}"] = feature_text(steps.feature[key])
    out.update({key: feature_text(value) for key, value in features.items() if key != "steps"})
    return out


def _readme(card: DatasetCard) -> str:
    return (Path(card.folder) / "README.md").read_text(encoding="utf-8").strip()


def _citation(card: DatasetCard) -> str:
    path = Path(card.folder) / "CITATIONS.bib"
    return path.read_text(encoding="utf-8").strip() if path.exists() else ""


def build_commands(card: DatasetCard, config: str, data_dir: str = "~/tensorflow_datasets") -> list[str]:
    """How to build ``config`` of a dataset from the command line (and, with manual data, on its dummy data)."""
    if card.name == "rlds_logs":
        return [f"rlds-lang build LOGS --name NAME --data-dir {data_dir}",
                f"rlds-lang build rlds_logs --config dummy --data-dir {data_dir}"]
    option = "" if config == NO_CONFIG else f" --config {config}"
    if card.manual is None or not card.manual.needed_by("" if config == NO_CONFIG else config):
        return [f"rlds-lang build {card.name}{option} --data-dir {data_dir}"]
    commands = [f"rlds-lang build {card.name}{option} --data-dir {data_dir} --manual-dir MANUAL_DIR"]
    if card.dummy_folder("" if config == NO_CONFIG else config):
        commands.append(f"rlds-lang build {card.name}{option} --data-dir {data_dir} --dummy-data")
    return commands


def _config_descriptions(name: str) -> dict[str, str]:
    builder_cls = _builders()[name]
    return {config.name: config.description for config in builder_cls.BUILDER_CONFIGS} or {NO_CONFIG: ""}


def field_lines(name: str, configs: list[str]) -> list[str]:
    """Markdown lines of what an episode holds: the fields every config has, then what some configs add."""
    per_config = {config: episode_fields(name, config) for config in configs}
    first = per_config[configs[0]]
    common = {k: v for k, v in first.items() if all(fields.get(k) == v for fields in per_config.values())}
    lines = [f"- `{field}`: {text}" for field, text in common.items()]
    groups: list[tuple[list[str], dict[str, str]]] = []
    for config, fields in per_config.items():
        extra = {k: v for k, v in fields.items() if k not in common}
        if not extra:
            continue
        for members, known in groups:
            if known == extra:
                members.append(config)
                break
        else:
            groups.append(([config], extra))
    for members, extra in groups:
        lines += ["", f"Configs {', '.join(f'`{c}`' for c in members)} also hold:", ""]
        lines += [f"- `{field}`: {text}" for field, text in extra.items()]
    return lines


def dataset_page(card: DatasetCard, heading: str = "#") -> str:
    """The whole catalog entry of one dataset as markdown (``datasets show`` and the docs page)."""
    builder_cls = _builders()[card.name]
    descriptions = _config_descriptions(card.name)
    configs = config_names(card)
    lines = [f"{heading} {card.name}", "", card.summary + ".", "", _readme(card), "",
             "| | |", "| --- | --- |", f"| version | {builder_cls.VERSION} |", f"| source | {card.source} |",
             f"| licence | {card.licence} |", ""]
    lines += [f"{heading}# Configs", "", "| config | what | size |", "| --- | --- | --- |"]
    lines += [f"| `{config}` | {descriptions.get(config, '')} | {card.sizes[config]} |" for config in configs]
    lines += ["", f"{heading}# What each episode holds", "", *field_lines(card.name, configs), ""]
    if card.manual is not None:
        manual = card.manual
        scope = f"configs {', '.join(f'`{c}`' for c in manual.configs)}" if manual.configs else "every config"
        lines += [f"{heading}# Data you fetch yourself", "", f"For {scope}: {manual.what}."]
        if manual.where:
            lines += ["", "From: " + ", ".join(manual.where) + "."]
        lines += ["", "The manual folder (`--manual-dir`, by default `<data_dir>/downloads/manual`) holds one of:", ""]
        lines += [f"- {layout.name}: " + ", ".join(f"`{f.replace('|', '` or `')}`" for f in layout.files)
                  + (f" (configs {', '.join(layout.configs)})" if layout.configs else "")
                  + (f"; the shipped dummy data: `{layout.dummy}/`" if layout.dummy else "")
                  for layout in manual.layouts]
        lines.append("")
    example = configs[0] if card.name != "rlds_logs" else "dummy"
    load_name = card.name if example == NO_CONFIG else f"{card.name}/{example}"
    lines += [f"{heading}# Build and load", "", "```bash", *build_commands(card, example), "```", "",
              "```python", "import tensorflow_datasets as tfds", "",
              f'episodes = tfds.load("{load_name}", data_dir="~/tensorflow_datasets", split="train")', "```", ""]
    citation = _citation(card)
    if citation:
        lines += [f"{heading}# Citation", "", "```bibtex", citation, "```", ""]
    return "\n".join(lines)


def list_text() -> str:
    """One line per dataset: name, summary, configs and whether it needs data you fetch yourself."""
    rows = []
    for name, card in cards().items():
        manual = ("" if card.manual is None else
                  " [manual data: " + (", ".join(card.manual.configs) if card.manual.configs else "every config") + "]")
        rows.append(f"{name}: {card.summary}{manual}\n    configs: {', '.join(config_names(card))}")
    return "\n".join(rows) + "\n\nrlds-lang datasets show NAME: configs, sizes, fields, source, licence, citation, build"


def index_page() -> str:
    """The catalog's index page (``docs/datasets/index.md``)."""
    lines = ["# Datasets", "", "Generated by `rlds-lang datasets docs --out docs/datasets` from each dataset's builder, "
             "`CARD.toml`, `README.md` and `CITATIONS.bib`; the same catalog prints with `rlds-lang datasets list` and "
             "`rlds-lang datasets show NAME`.", "", "| dataset | what | configs | data |", "| --- | --- | --- | --- |"]
    for name, card in cards().items():
        data = ("generated while building" if card.manual is None else
                "you fetch it" + (f" ({', '.join(card.manual.configs)})" if card.manual.configs else ""))
        if name == "rlds_logs":
            data = "your own logs"
        lines.append(f"| [{name}]({name}.md) | {card.summary} | {', '.join(config_names(card))} | {data} |")
    return "\n".join(lines) + "\n"


def write_docs(out: str | os.PathLike) -> list[Path]:
    """Writes the index and one page per dataset into ``out``; returns the paths written."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "index.md"]
    written[0].write_text(index_page(), encoding="utf-8")
    for name, card in cards().items():
        page = folder / f"{name}.md"
        page.write_text(dataset_page(card).rstrip("\n") + "\n", encoding="utf-8")
        written.append(page)
    return written


def copy_dummy(card: DatasetCard, config: str | None, out: str | os.PathLike, layout: str | None = None) -> Path:
    """Copies the dummy data ``card``'s ``config`` reads (the first config's, when ``config`` is None; in the layout
    named ``layout``, else its first) into the new folder ``out``: a manual folder to try the tools on, from an
    installed copy as from a checkout."""
    import shutil

    configs = [c for c in config_names(card) if card.dummy_folder("" if c == NO_CONFIG else c)]
    if not configs:
        raise SystemExit(f"rlds-lang datasets dummy: {card.name} reads no manual folder, so it ships no dummy data")
    chosen = config or configs[0]
    source = card.dummy_folder("" if chosen == NO_CONFIG else chosen, layout)
    if source is None:
        layouts = [x.name for x in card.manual.layouts_for(chosen) if x.dummy] if card.manual else []
        raise SystemExit(f"rlds-lang datasets dummy: {card.name}/{chosen} ships no dummy data"
                         + (f" in layout {layout!r}; its layouts with dummy data: {', '.join(layouts)}" if layouts
                            else f"; configs that do: {', '.join(configs)}"))
    target = Path(out)
    if target.exists() and any(target.iterdir()):
        raise SystemExit(f"rlds-lang datasets dummy: {target} is not empty: copy into a new folder")
    shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def cmd_datasets(args: argparse.Namespace) -> None:
    """``rlds-lang datasets list|show|dummy|docs``."""
    if args.datasets_command == "list":
        print(list_text())
    elif args.datasets_command == "show":
        print(dataset_page(card_of(args.name)))
    elif args.datasets_command == "dummy":
        target = copy_dummy(card_of(args.name), args.config, args.out, args.layout)
        print(f"{args.name}: dummy data (made up, for trying the tools) -> {target}")
    else:
        for path in write_docs(args.out):
            print(f"wrote {path}")


def add_datasets_parser(sub: Any) -> None:
    """``rlds-lang datasets list|show NAME|dummy NAME --out DIR|docs --out DIR``."""
    from trainers.cli.commands import COMMAND_HELP

    parser = sub.add_parser("datasets", help=COMMAND_HELP["datasets"],
                            description="The catalog: every dataset's configs, what each episode holds, sizes, "
                                        "source, licence, citation and how to build it.")
    inner = parser.add_subparsers(dest="datasets_command", required=True, metavar="COMMAND")
    inner.add_parser("list", help="one line per dataset: what it holds, its configs, whether you fetch its data")
    show = inner.add_parser("show", help="a dataset's card: configs, sizes, fields, source, licence, citation, build")
    show.add_argument("name", help="a dataset name (rlds-lang datasets list)")
    dummy = inner.add_parser("dummy", help="copy the dummy data a dataset ships (a manual folder to try the tools on)")
    dummy.add_argument("name", help="a dataset that reads a manual folder (visdial, reddit_comments, ...)")
    dummy.add_argument("--config", default=None, help="the config whose layout to copy (default: the first config's)")
    dummy.add_argument("--layout", default=None,
                       help="the layout of the manual folder to copy (rlds-lang datasets show NAME lists them)")
    dummy.add_argument("--out", required=True, help="a new folder for the copy")
    docs = inner.add_parser("docs", help="write the catalog as the documentation site's pages (an index and a page "
                                         "per dataset)")
    docs.add_argument("--out", default="docs/datasets", help="the folder of the pages (default: docs/datasets)")
    parser.set_defaults(func=cmd_datasets)


__all__ = ["NO_CONFIG", "add_datasets_parser", "build_commands", "card_of", "cards", "cmd_datasets", "config_names", "copy_dummy", "dataset_page", "datasets_folder", "episode_fields", "feature_text",
           "field_lines", "index_page", "list_text", "write_docs"]
