"""The datasets' catalog (``rlds-lang datasets list|show|dummy|docs``, ``docs/datasets/``), the manual-data checks
that ``rlds-lang build`` and the builders make before TFDS or Beam starts, and small builds named as such."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from loggers.dataset_cards import ManualDataError, manual_data_message, manual_problem, read_card
from trainers.cli import datasets as catalog
from trainers.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
PAGES = REPO / "docs" / "datasets"


def test_every_dataset_has_a_card_whose_configs_are_its_builders():
    import rlds_lang_datasets

    cards = catalog.cards()
    assert sorted(cards) == sorted(rlds_lang_datasets.BUILDERS)
    for name, card in cards.items():
        configs = [c.name for c in rlds_lang_datasets.BUILDERS[name].BUILDER_CONFIGS] or [catalog.NO_CONFIG]
        assert list(card.sizes) == configs, name
        assert card.summary and card.source and card.licence, name


def test_every_config_that_reads_a_manual_folder_ships_dummy_data_that_fits_its_card():
    checked = 0
    for name, card in catalog.cards().items():
        for config in catalog.config_names(card):
            label = "" if config == catalog.NO_CONFIG else config
            if card.manual is None or not card.manual.needed_by(label):
                assert card.dummy_folder(label) is None
                continue
            dummy = card.dummy_folder(label)
            assert dummy and os.path.isdir(dummy), (name, config)
            assert manual_problem(card, label, dummy) is None, (name, config)
            checked += 1
    assert checked >= 20


def test_a_manual_folder_lacking_a_file_is_named_with_what_to_fetch_and_the_dummy_command(tmp_path):
    card = read_card(REPO / "builders" / "visdial")
    manual = tmp_path / "manual"
    assert manual_problem(card, "yn", manual) == f"{manual} does not exist"
    shutil.copytree(card.dummy_folder("yn"), manual)
    (manual / "data_img.h5").unlink()
    problem = manual_problem(card, "yn", manual)
    assert problem == f"{manual} lacks data_img.h5"
    message = manual_data_message(card, "yn", problem, data_dir="runs/tfds")
    assert message.splitlines()[0] == f"visdial/yn reads files you fetch yourself, and {manual} lacks data_img.h5."
    assert "https://visualdialog.org/data" in message and "visdial_0.5_train.json" in message
    assert message.splitlines()[-1] == ("Try the shipped dummy data first: rlds-lang build visdial --config yn "
                                        "--data-dir runs/tfds --dummy-data")
    reddit = read_card(REPO / "builders" / "reddit_comments")  # two layouts: either fits
    assert manual_problem(reddit, "toxicity", reddit.dummy_folder("toxicity", "dumps")) is None
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    assert "comments_positive.csv" in manual_problem(reddit, "toxicity", tmp_path / "other")
    assert "*.zst or *.ndjson" in manual_problem(reddit, "toxicity", tmp_path / "other")


def test_datasets_list_and_show_print_the_catalog(capsys):
    _datasets("list")
    listed = capsys.readouterr().out
    for name, card in catalog.cards().items():
        assert f"{name}: {card.summary}" in listed
    assert "visdial: " in listed and "[manual data: every config]" in listed
    with pytest.raises(SystemExit, match="no dataset 'nope'; the datasets are preferences, reddit_comments"):
        _datasets("show", "nope")


def test_the_full_command_line_has_the_catalog_and_build_commands():
    args = build_parser().parse_args(["build", "logs", "--name", "echo", "--data-dir", "d"])
    assert args.func.__module__ == "trainers.cli.build" and args.name == "echo"
    assert build_parser().parse_args(["datasets", "show", "visdial"]).func is catalog.cmd_datasets


def test_datasets_dummy_copies_the_dummy_data_of_a_layout(tmp_path, capsys):
    _datasets("dummy", "reddit_comments", "--layout", "dumps", "--out", str(tmp_path / "dump"))
    assert sorted(p.name for p in (tmp_path / "dump").iterdir()) == ["RC_dummy.ndjson", "RC_dummy.zst"]
    with pytest.raises(SystemExit, match="is not empty"):
        _datasets("dummy", "reddit_comments", "--out", str(tmp_path / "dump"))
    with pytest.raises(SystemExit, match="reads no manual folder"):
        _datasets("dummy", "rlds_logs", "--out", str(tmp_path / "x"))


def test_the_catalog_index_and_the_generic_builders_page_are_current():
    """The fast twin of ``test_the_catalog_pages_are_current``: the index (cards only) and one page."""
    assert (PAGES / "index.md").read_text(encoding="utf-8") == catalog.index_page()
    card = catalog.card_of("rlds_logs")
    assert (PAGES / "rlds_logs.md").read_text(encoding="utf-8") == catalog.dataset_page(card).rstrip("\n") + "\n"


def test_the_catalog_pages_are_current(tmp_path):
    """``docs/datasets/`` is what ``rlds-lang datasets docs --out docs/datasets`` writes today."""
    written = catalog.write_docs(tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in PAGES.glob("*.md"))
    for page in written:
        assert page.read_text(encoding="utf-8") == (PAGES / page.name).read_text(encoding="utf-8"), (
            f"docs/datasets/{page.name} is stale: run rlds-lang datasets docs --out docs/datasets")
    wordle = (PAGES / "wordle_synthetic.md").read_text(encoding="utf-8")
    assert "| `expert` | OptimalPolicy" in wordle and "- `steps/observation`: {text: text, feedback: int8[5]" in wordle
    assert "Configs `branch`, `branch_adversarial`, `ilql_adversarial` also hold:" in wordle


# -- rlds-lang build: the checks before tfds build starts -----------------------------------------------------------

@pytest.fixture
def no_tfds_build(monkeypatch):
    """``trainers.core.build.tfds_build`` recorded instead of run: its calls."""
    import trainers.core.build

    calls = []
    monkeypatch.setattr(trainers.core.build, "tfds_build", lambda *a, **k: calls.append((a, k)) or "built-folder")
    return calls


def _parse(*argv: str):
    """``argv`` parsed by the ``build`` and ``datasets`` commands alone (the full parser costs seconds)."""
    import argparse

    from trainers.cli.build import add_build_parser

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    add_build_parser(sub)
    catalog.add_datasets_parser(sub)
    return parser.parse_args(list(argv))


def _build(*argv: str):
    args = _parse("build", *argv)
    return args.func(args)


def _datasets(*argv: str):
    args = _parse("datasets", *argv)
    return args.func(args)


def test_build_says_what_to_fetch_before_tfds_starts(no_tfds_build, tmp_path):
    with pytest.raises(SystemExit) as error:
        _build("visdial", "--config", "yn", "--data-dir", str(tmp_path))
    message = str(error.value)
    assert message.startswith(f"visdial/yn reads files you fetch yourself, and {tmp_path}/downloads/manual does not "
                              "exist.")
    assert f"rlds-lang build visdial --config yn --data-dir {tmp_path} --dummy-data" in message
    assert no_tfds_build == []  # nothing started
    assert _build("visdial", "--config", "yn", "--data-dir", str(tmp_path), "--dummy-data") == "built-folder"
    dummy = str(REPO / "builders" / "visdial" / "dummy_data")
    assert no_tfds_build == [(("visdial", "yn", str(tmp_path)), {"manual_dir": dummy, "small": None,
                                                                  "file_format": None})]
    with pytest.raises(SystemExit, match="give --config, one of expert, branch"):
        _build("wordle_synthetic", "--data-dir", str(tmp_path))
    with pytest.raises(SystemExit, match="reads no manual folder"):
        _build("wordle_synthetic", "--config", "expert", "--data-dir", str(tmp_path), "--dummy-data")


def test_build_points_other_logs_at_the_generic_builder_in_one_line(no_tfds_build, tmp_path):
    from loggers import record
    from tests.test_own_environment import TextGame

    logs = tmp_path / "logs"
    record(TextGame(), lambda o, a: o[-1]["word"], episodes=2, data_dir=logs, progress=False)
    with pytest.raises(SystemExit) as error:
        _build("wordle_synthetic", "--config", "manual_dir", "--manual-dir", str(logs), "--data-dir", "d")
    message = str(error.value)
    assert "\n" not in message and f"rlds-lang build {logs} --name NAME --data-dir d" in message
    assert "recorded from task 'text_game'" in message
    with pytest.raises(SystemExit, match="is a folder: to build the logs in it, name the dataset"):
        _build(str(logs), "--data-dir", "d")
    assert _build(str(logs), "--name", "text_game", "--data-dir", "d") == "built-folder"
    assert _build(str(logs), "--name", "text_game", "--data-dir", "ar", "--file-format", "array_record") == "built-folder"
    assert no_tfds_build == [(("rlds_logs", "text_game", "d"), {"config_fields": {"logs": str(logs)}, "file_format": None}),
                             (("rlds_logs", "text_game", "ar"), {"config_fields": {"logs": str(logs)},
                                                                 "file_format": "array_record"})]
    with pytest.raises(SystemExit, match="--name 'Text Game'"):
        _build(str(logs), "--name", "Text Game", "--data-dir", "d")


def test_a_builder_checks_its_manual_folder_before_beam_starts(tmp_path):
    import tensorflow_datasets as tfds

    import rlds_lang_datasets

    builder = rlds_lang_datasets.BUILDERS["wordle_tweets"](config="true_word", data_dir=str(tmp_path / "tfds"))
    (tmp_path / "manual").mkdir()
    (tmp_path / "manual" / "tweets.csv").write_text("wordle_id,tweet_id,tweet_date,tweet_username,tweet_text\n")
    with pytest.raises(ManualDataError) as error:
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=str(tmp_path / "manual")))
    message = str(error.value)
    assert "lacks answers_by_day.csv" in message and "kaggle.com/datasets/benhamner/wordle-tweets" in message
    assert "--dummy-data" in message
    assert "rlds-lang build wordle_tweets --config CONFIG" in rlds_lang_datasets.BUILDERS[
        "wordle_tweets"].MANUAL_DOWNLOAD_INSTRUCTIONS


# -- small builds ---------------------------------------------------------------------------------------------------

def test_a_small_build_has_its_own_config_name_and_says_so_in_its_metadata(tmp_path, monkeypatch):
    import rlds_lang_datasets

    builder_cls = rlds_lang_datasets.BUILDERS["wordle_synthetic"]
    monkeypatch.delenv("RLDS_LANG_SMALL", raising=False)
    full = builder_cls(config="expert", data_dir=str(tmp_path))
    assert full.builder_config.name == "expert" and "small_build" not in (full.info.metadata or {})
    monkeypatch.setenv("RLDS_LANG_SMALL", "50")
    small = builder_cls(config="expert", data_dir=str(tmp_path))
    assert small.builder_config.name == "expert_small50"
    assert small.data_dir.endswith(os.path.join("wordle_synthetic", "expert_small50", "1.1.0"))
    assert small.info.metadata["small_build"] == 50 and "Small build" in small.builder_config.description
    again = builder_cls(config=small.builder_config, data_dir=str(tmp_path))  # TFDS reloads with the object
    assert again.builder_config.name == "expert_small50"


def test_tfds_build_finds_a_small_build_under_its_own_name(tmp_path, monkeypatch):
    import json

    from trainers.core.build import tfds_build

    monkeypatch.delenv("RLDS_LANG_SMALL", raising=False)
    folder = tmp_path / "wordle_synthetic" / "expert_small3" / "1.1.0"
    folder.mkdir(parents=True)
    (folder / "dataset_info.json").write_text(json.dumps({"name": "wordle_synthetic", "splits": []}))
    assert tfds_build("wordle_synthetic", "expert", tmp_path, small=3) == str(folder)  # found: not built again


def test_the_sizes_of_generated_configs_name_the_games_their_recipes_play():
    """The catalog's sizes are text; for the configs that play recipes, the number of games they play (branches
    aside) must be in it, so that a recipe that changes size cannot leave the card behind."""
    import rlds_lang_datasets

    card = catalog.card_of("wordle_synthetic")
    checked = 0
    for config in rlds_lang_datasets.BUILDERS["wordle_synthetic"].BUILDER_CONFIGS:
        recipes = (*config.recipes, *config.eval_recipes)
        if recipes:
            games = sum(recipe.num_episodes() for recipe in recipes)
            assert f"{games:,}" in card.sizes[config.name], (config.name, games, card.sizes[config.name])
            checked += 1
    assert checked == 7
