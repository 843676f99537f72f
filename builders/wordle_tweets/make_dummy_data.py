"""Writes ``dummy_data/`` for the wordle_tweets builder test: a tweets CSV made by the project (no real
tweets), a small ``answers_by_day.csv`` and small ``answers.txt``/``guesses.txt`` lists.

Valid tweets are random games (seeded) played under the official rule with words of the small lists,
shared in every colour scheme with the noise people add (text around the grid, ``\\r\\n``, variation
selectors, a thousands separator, hard mode). One record of each rejection kind follows; their
expected counts per config are in ``EXPECTED`` below and checked by the builder test.

Run from the repository root: ``.venv/bin/python -m builders.wordle_tweets.make_dummy_data``.
"""

from __future__ import annotations

import csv
import os

import numpy as np

from rlds_lang.wordle.game import colour
from rlds_lang.wordle.tweets import CSV_COLUMNS, SCHEMES, share_text
from rlds_lang.wordle.words import official_answers, official_guesses

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dummy_data")
NUM_VALID = 48
FIRST_DAY = 200
BIG_DAY = 1234          # shared as "Wordle 1,234"
OUTSIDE_DAY = 300       # its answer is an official answer missing from the small answers.txt
UNKNOWN_DAY = 999       # not in answers_by_day.csv

#: rejections each config must report for dummy_data (the builder test checks them).
_PARSE = {"no_header": 1, "no_rows": 1, "unknown_square": 1, "row_width": 1, "too_many_rows": 1,
          "win_not_last": 1, "result_mismatch": 2, "malformed_csv": 1, "day_mismatch": 1, "duplicate_tweet": 1}
EXPECTED = {
    "true_word": {**_PARSE, "day_not_in_answer_table": 1, "no_guess_for_row": 1},
    "any_answer": {**_PARSE, "no_consistent_answer": 1},
    "true_word_manual_lists": {**_PARSE, "day_not_in_answer_table": 1, "no_guess_for_row": 1,
                               "answer_not_in_word_list": 1},
    "any_answer_manual_lists": {**_PARSE, "no_consistent_answer": 1},
}


def _play(rng: np.random.Generator, answer: str, guesses: list[str]) -> list[tuple[int, ...]]:
    """Colour rows of a random game: random guesses until the answer is drawn or six rows are played."""
    rows = []
    for turn in range(6):
        guess = answer if rng.random() < 0.05 + 0.15 * turn else guesses[int(rng.integers(len(guesses)))]
        rows.append(colour(guess, answer))
        if guess == answer:
            break
    return rows


def _noisy(text: str, k: int) -> str:
    """The share text with the noise of tweet ``k``: surrounding text, CRLF, variation selectors."""
    if k % 3 == 0:
        text = text.replace("⬛", "⬛\ufe0f").replace("⬜", "⬜\ufe0f")
    if k % 4 == 1:
        text = text.replace("\n", "\r\n")
    if k % 5 == 2:
        text = f"Phew, close one today!\n{text}\n#wordle #WordleHelp"
    return text


def main() -> None:
    """Writes the four dummy files."""
    rng = np.random.default_rng(2022)
    small_answers = list(official_answers().words[::80])          # 29 answers
    small_guesses = small_answers + [w for w in official_guesses().words[::45] if w not in small_answers]
    outside = next(w for w in official_answers().words if w not in small_answers)
    days = [FIRST_DAY + i for i in range(NUM_VALID - 1)] + [BIG_DAY]
    table = {day: small_answers[int(rng.integers(len(small_answers)))] for day in days}
    table[OUTSIDE_DAY] = outside
    schemes = list(SCHEMES)
    records = []
    for k, day in enumerate(days + [OUTSIDE_DAY, UNKNOWN_DAY]):
        answer = table.get(day, small_answers[0])
        pool = small_guesses if day != OUTSIDE_DAY else [answer, "crane", "slate"]
        text = share_text(day, _play(rng, answer, pool), hard_mode=k % 6 == 5, scheme=schemes[k % len(schemes)])
        records.append([str(day), str(1_480_000_000_000_000_000 + 7919 * k), f"2022-02-{1 + k % 28:02d}",
                        f"user{k}", _noisy(text, k)])
    bad_texts = {
        "no_header": (201, "Loving this game ⬛🟨⬛⬛⬛"),
        "no_rows": (201, "Wordle 201 3/6 so close today"),
        "unknown_square": (201, "Wordle 201 2/6\n\n🟥🟨⬛⬛⬛\n🟩🟩🟩🟩🟩"),
        "row_width": (201, "Wordle 201 2/6\n\n⬛🟨⬛⬛\n🟩🟩🟩🟩🟩"),
        "too_many_rows": (201, "Wordle 201 X/6\n" + "\n".join(["⬛🟨⬛⬛⬛"] * 7)),
        "win_not_last": (201, "Wordle 201 3/6\n🟩🟩🟩🟩🟩\n⬛🟨⬛⬛⬛\n🟩🟩🟩🟩🟩"),
        "result_mismatch": (201, "Wordle 201 4/6\n⬛🟨⬛⬛⬛\n🟩🟩🟩🟩🟩"),
        "result_mismatch_x": (201, "Wordle 201 X/6\n⬛🟨⬛⬛⬛\n⬛🟨⬛⬛⬛"),
        "day_mismatch": (202, "Wordle 201 1/6\n🟩🟩🟩🟩🟩"),
        "no_guess_for_row": (UNKNOWN_DAY - 1, "Wordle 998 2/6\n🟩🟩🟩🟩🟨\n🟩🟩🟩🟩🟩"),
    }
    table[UNKNOWN_DAY - 1] = small_answers[1]
    base = 1_490_000_000_000_000_000
    for k, (day, text) in enumerate(bad_texts.values()):
        records.append([str(day), str(base + k), "2022-02-10", f"bad{k}", text])
    records.append(list(records[0]))                                   # duplicate_tweet
    records.append(["not-a-day", str(base + 99), "2022-02-11", "bad99", "Wordle 201 1/6\n🟩🟩🟩🟩🟩"])  # malformed
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "tweets.csv"), "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(records)
    with open(os.path.join(OUT, "answers_by_day.csv"), "w", encoding="utf-8") as f:
        f.write("day,answer\n" + "".join(f"{day},{word}\n" for day, word in sorted(table.items())))
    for name, words in (("answers.txt", small_answers), ("guesses.txt", small_guesses)):
        with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
            f.write("".join(f"{w}\n" for w in words))


if __name__ == "__main__":
    main()
