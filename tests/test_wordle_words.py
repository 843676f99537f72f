"""Word lists: defaults, validation errors that name the file and line."""

import pytest

from rlds_lang.wordle.words import (
    WordListError,
    load_word_list,
    official_answers,
    official_guesses,
)


def test_official_lists():
    answers, guesses = official_answers(), official_guesses()
    assert len(answers) == 2315
    assert all(w in guesses for w in answers)
    assert len(answers.sha256) == 64 and answers.sha256 != guesses.sha256


def test_load_from_file(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("# my list\ncrane\n\nSLATE\n")
    words = load_word_list(path)
    assert words.words == ("crane", "slate") and words.name == "mine"


@pytest.mark.parametrize(
    "content, line, what",
    [("crane\ncran\n", 2, "cran"), ("crane\ncr4ne\n", 2, "cr4ne"), ("crane\nslate\ncrane\n", 3, "duplicate"),
     ("crane\nnaïve\n", 2, "naïve"), ("abcdef\n", 1, "abcdef")],
)
def test_malformed_lists_name_file_and_line(tmp_path, content, line, what):
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(WordListError) as err:
        load_word_list(path)
    assert f"{path}:{line}" in str(err.value) and what in str(err.value)


def test_empty_list_is_an_error(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("# nothing\n")
    with pytest.raises(WordListError, match="empty"):
        load_word_list(path)
