"""Word-as-token Wordle that sees the board letter by letter: ``WordBoardTokenizer``.

With a word per token (``rlds_lang.tokenizers.word_tokenizer``), a game reads ``[BOS] [EOO] crane [EOA]
⬛🟨⬛⬛🟩 [EOO] ...``: the guess is one id and its feedback another, and which letter got which colour is
bound only inside the model, from two unrelated embeddings. A small model trained from scratch did not learn
that (README, *LMRL-Gym's Wordle setting*: uniform guessing after 4,000 steps). This tokenizer writes each feedback as five
*cells*, one id per (letter, colour) of the guess it answers -- ``c⬛ r🟨 a⬛ n⬛ e🟩`` -- so that the evidence
about the hidden word is a bag of ids whose meaning does not depend on the guess, while a guess stays one id.

The dataset is unchanged (an observation is still the squares alone); the cells are a token view built from
the observation and the action before it: ``encode_observation(text, previous_action)``,
``tf_encode_observations`` in ``transforms.token_mdp``, and ``encode_prompt`` for agents. Any other text
(a word outside the list, the empty first observation) is encoded character by character, so ``decode``
gives every action back exactly; an observation decodes to its cells (``observation_text`` strips the
letters again).

An observation may also write its cells out itself, as ``decode`` prints them: a text that ends with five
(letter, square) pairs -- ``checkc⬛r🟨a⬛n⬛e🟩``, as ``rlds_lang.wordle_roles`` writes the board after a role
prompt, where the action before an observation is not always the guess its squares answer -- is encoded as
what comes before the pairs (``encode``), then the five cells; ``decode`` gives such a text back exactly.

Example::

    from rlds_lang.wordle.board_tokenizer import WordBoardTokenizer

    tok = WordBoardTokenizer(["crane", "slate"])
    tok.encode("crane")                                  # one id
    tok.encode_observation("⬛🟨⬛⬛🟩", "crane")           # five cell ids
    tok.encode_prompt(["", "⬛🟨⬛⬛🟩"], ["crane"])        # the context of the second guess
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from rlds_lang.char_tokenizer import (WORDLE_LETTERS, WORDLE_SQUARES, CharTokenizer, from_json_file, ragged_positions,
                                  write_json_object)
from rlds_lang.wordle.words import WORD_LENGTH

if TYPE_CHECKING:  # pragma: no cover - type hints only
    import tensorflow as tf

FORMAT = "rlds_lang.WordBoardTokenizer"
FORMAT_VERSION = 1


class WordBoardTokenizer:
    """Word-as-token actions, feedback as (letter, colour) cells (module docstring).

    Ids: the specials of ``CharTokenizer`` (0..5), then the single characters (letters, then squares, the ids
    ``CharTokenizer(letters + squares)`` gives them), then one cell per (letter, square), then one id per word.

    >>> tok = WordBoardTokenizer(["crane", "slate"])
    >>> tok.vocab_size, len(tok.encode("crane")), tok.decode(tok.encode("crane")), tok.encode("cr")
    (196, 1, 'crane', [8, 23])
    >>> tok.decode(tok.encode_observation("⬛🟨⬛⬛🟩", "crane"))
    'c⬛r🟨a⬛n⬛e🟩'
    """

    SPECIALS = CharTokenizer.SPECIALS

    def __init__(self, words: Sequence[str], name: str = "words_board", letters: str = WORDLE_LETTERS,
                 squares: str = WORDLE_SQUARES):
        self.name, self.letters, self.squares = name, letters, squares
        self._chars = CharTokenizer(letters + squares, name=f"{name} characters")
        self.pad_id, self.bos_id, self.eos_id, self.eoo_id, self.eoa_id, self.unk_id = range(len(self.SPECIALS))
        self._first_letter = len(self.SPECIALS)
        self._first_square = self._first_letter + len(letters)
        self._first_cell = self._first_square + len(squares)
        self._first_word = self._first_cell + len(letters) * len(squares)
        self.words = list(words)
        self._word_ids: dict[str, int] = {}
        for index, word in enumerate(self.words):
            if not isinstance(word, str) or len(word) != WORD_LENGTH or any(c not in letters for c in word):
                raise ValueError(f"WordBoardTokenizer {name!r}: words[{index}] = {word!r} is not {WORD_LENGTH} "
                                 f"letters of {letters!r}")
            if word in self._word_ids:
                raise ValueError(f"WordBoardTokenizer {name!r}: words[{index}] = {word!r} is listed twice")
            self._word_ids[word] = self._first_word + index
        self.vocab_size = self._first_word + len(self.words)
        self._sorted_codes, self._sorted_code_ids = self._word_codes()

    def __repr__(self) -> str:
        return f"WordBoardTokenizer({len(self.words)} words, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WordBoardTokenizer) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.name, tuple(self.words), self.letters, self.squares))

    def encode(self, text: str, strict: bool = True) -> list[int]:
        """A listed word as its one id; any other text character by character (``CharTokenizer.encode``:
        ``strict`` raises on a character outside the letters and squares, else it becomes ``unk_id``)."""
        word = self._word_ids.get(text)
        return [word] if word is not None else self._chars.encode(text, strict)

    def _bindable(self, text: str, previous_action: str) -> bool:
        return (len(text) == len(previous_action) == WORD_LENGTH and all(c in self.squares for c in text)
                and all(c in self.letters for c in previous_action))

    def _written_cells_start(self, text: str) -> int | None:
        """Where the five written-out (letter, square) pairs that end ``text`` start; None if it does not end so."""
        start = len(text) - 2 * WORD_LENGTH
        if start < 0:
            return None
        run = text[start:]
        return start if all(c in self.letters for c in run[::2]) and all(c in self.squares for c in run[1::2]) else None

    def _cells(self, word: str, squares: str) -> list[int]:
        width = len(self.squares)
        return [self._first_cell + self.letters.index(letter) * width + self.squares.index(square)
                for letter, square in zip(word, squares)]

    def encode_observation(self, text: str, previous_action: str, strict: bool = True) -> list[int]:
        """Feedback squares as the cells of ``previous_action`` (the guess they answer); a text that ends with its
        cells written out (``checkc⬛r🟨a⬛n⬛e🟩``) as what comes before them (``encode``) and those cells; any
        other observation (the first one, ``""``) as ``encode`` writes it.

        >>> tok = WordBoardTokenizer(["crane"])
        >>> tok.decode(tok.encode_observation("checkc⬛r🟨a⬛n⬛e🟩", "accept"))
        'checkc⬛r🟨a⬛n⬛e🟩'
        >>> len(tok.encode_observation("checkc⬛r🟨a⬛n⬛e🟩", "accept"))  # 5 characters, 5 cells
        10
        """
        if self._bindable(text, previous_action):
            return self._cells(previous_action, text)
        start = self._written_cells_start(text)
        if start is None:
            return self.encode(text, strict)
        return self.encode(text[:start], strict) + self._cells(text[start::2], text[start + 1::2])

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> str:
        """The text of ``ids``: words, cells (letter then square) and characters; specials as
        ``CharTokenizer.decode``."""
        out = []
        width = len(self.squares)
        for token in (int(i) for i in ids):
            if token >= self._first_word:
                out.append(self.words[token - self._first_word])
            elif token >= self._first_cell:
                letter, square = divmod(token - self._first_cell, width)
                out.append(self.letters[letter] + self.squares[square])
            else:
                out.append(self._chars.decode([token], skip_special))
        return "".join(out)

    def observation_text(self, cells: str) -> str:
        """The observation a decoded run of cells came from: its squares.

        >>> WordBoardTokenizer(["crane"]).observation_text("c⬛r🟨a⬛n⬛e🟩")
        '⬛🟨⬛⬛🟩'
        """
        return "".join(c for c in cells if c not in self.letters)

    def encode_prompt(self, observations: Sequence[str], actions: Sequence[str], strict: bool = False) -> list[int]:
        """``[BOS] o_0 [EOO] a_0 [EOA] ... o_t [EOO]`` with each ``o_i`` the cells of ``a_{i-1}``
        (``CharTokenizer.encode_prompt``'s layout, token for token what ``transforms.token_mdp`` builds)."""
        if len(actions) != len(observations) - 1:
            raise ValueError(f"encode_prompt needs one action fewer than observations, got {len(observations)} "
                             f"observations and {len(actions)} actions")
        ids, previous = [self.bos_id], ""
        for observation, action in zip(observations, actions):
            ids += (self.encode_observation(observation, previous, strict) + [self.eoo_id]
                    + self.encode(action, strict) + [self.eoa_id])
            previous = action
        return ids + self.encode_observation(observations[-1], previous, strict) + [self.eoo_id]

    def _word_codes(self) -> tuple[list[int], list[int]]:
        """Each word as a base-(letters + 1) number (letters counted from 1), sorted, with its id."""
        base = len(self.letters) + 1
        codes = {sum((self.letters.index(c) + 1) * base ** (WORD_LENGTH - 1 - k) for k, c in enumerate(word)): i
                 for word, i in self._word_ids.items()}
        order = sorted(codes)
        return order, [codes[c] for c in order]

    def tf_encode(self, texts: "tf.Tensor") -> "tf.RaggedTensor":
        """Vectorised ``encode(..., strict=False)``: ``[N]`` texts -> int32 ``[N, None]`` (a scalar -> ``[None]``).

        Stateless (no lookup table), so it runs inside any ``tf.data`` function: a text of five letters is
        numbered in base 27 and looked up with a sorted search among the words' numbers.

        >>> import tensorflow as tf
        >>> tok = WordBoardTokenizer(["crane", "slate"])
        >>> tok.tf_encode(tf.constant(["slate", "sl", ""])).to_list() == [tok.encode(t) for t in ("slate", "sl", "")]
        True
        """
        import tensorflow as tf

        texts = tf.convert_to_tensor(texts, tf.string)
        if texts.shape.rank == 0:
            return self.tf_encode(texts[None])[0]
        return self._words_or_chars(self._chars.tf_encode(texts))

    def _words_or_chars(self, chars: "tf.RaggedTensor") -> "tf.RaggedTensor":
        """``tf_encode`` of texts already split into character ids (``[N, (characters)]``): a row that spells a
        listed word becomes its one id, any other row stays as it is."""
        import tensorflow as tf

        letter = chars.values - self._first_letter                             # 0.. for letters
        is_letter = (letter >= 0) & (letter < len(self.letters))
        _, position = ragged_positions(chars)
        base = len(self.letters) + 1
        digit = tf.cast(tf.where(is_letter, letter + 1, 0), tf.int64)
        power = tf.pow(tf.constant(base, tf.int64), tf.maximum(WORD_LENGTH - 1 - position, 0))
        code = tf.reduce_sum(chars.with_flat_values(digit * power), axis=1)
        all_letters = tf.reduce_all(chars.with_flat_values(is_letter), axis=1)
        sorted_codes = tf.constant(self._sorted_codes, tf.int64)
        where = tf.minimum(tf.searchsorted(sorted_codes, code, out_type=tf.int32), len(self._sorted_codes) - 1)
        found = (chars.row_lengths() == WORD_LENGTH) & all_letters & tf.equal(tf.gather(sorted_codes, where), code)
        words = tf.gather(tf.constant(self._sorted_code_ids, tf.int32), where)
        return _rows_where(found, words[:, None], chars)

    def tf_encode_observations(self, texts: "tf.Tensor", previous_actions: "tf.Tensor") -> "tf.RaggedTensor":
        """Vectorised ``encode_observation(..., strict=False)`` of ``[N]`` observations and the ``[N]`` actions
        before them (``""`` at an episode's first step): int32 ``[N, None]``.

        >>> import tensorflow as tf
        >>> tok = WordBoardTokenizer(["crane"])
        >>> got = tok.tf_encode_observations(tf.constant(["⬛🟨⬛⬛🟩", "", "⬛"]), tf.constant(["crane", "", "crane"]))
        >>> got.to_list() == [tok.encode_observation(*p) for p in (("⬛🟨⬛⬛🟩", "crane"), ("", ""), ("⬛", "crane"))]
        True
        """
        import tensorflow as tf

        squares, letters = self._chars.tf_encode(texts), self._chars.tf_encode(previous_actions)
        square = squares.values - self._first_square
        letter = letters.values - self._first_letter
        all_squares = tf.reduce_all(squares.with_flat_values((square >= 0) & (square < len(self.squares))), axis=1)
        all_letters = tf.reduce_all(letters.with_flat_values((letter >= 0) & (letter < len(self.letters))), axis=1)
        bindable = ((squares.row_lengths() == WORD_LENGTH) & (letters.row_lengths() == WORD_LENGTH)
                    & all_squares & all_letters)
        keep_square = tf.repeat(bindable, squares.row_lengths())
        keep_letter = tf.repeat(bindable, letters.row_lengths())
        cells = (self._first_cell + tf.boolean_mask(letter, keep_letter) * len(self.squares)
                 + tf.boolean_mask(square, keep_square))
        bound = tf.RaggedTensor.from_row_lengths(cells, tf.where(bindable, tf.constant(WORD_LENGTH, tf.int64), 0))
        return _rows_where(bindable, bound, self._with_written_cells(squares))

    def _with_written_cells(self, chars: "tf.RaggedTensor") -> "tf.RaggedTensor":
        """``encode_observation``'s rule for texts without a guess to bind, on texts split into character ids: a
        row that ends with five written-out (letter, square) pairs becomes its beginning (``_words_or_chars``)
        and five cells; any other row becomes ``_words_or_chars`` of it."""
        import tensorflow as tf

        run = 2 * WORD_LENGTH
        rows, position = ragged_positions(chars)
        from_end = tf.gather(chars.row_lengths(), rows) - position              # 1 for a row's last value
        in_run = from_end <= run
        letter = chars.values - self._first_letter
        square = chars.values - self._first_square
        is_letter = (letter >= 0) & (letter < len(self.letters))
        is_square = (square >= 0) & (square < len(self.squares))
        wants_letter = tf.equal(from_end % 2, 0)                                # run positions 0, 2, ...: letters
        fits = tf.logical_not(in_run) | tf.where(wants_letter, is_letter, is_square)
        written = (chars.row_lengths() >= run) & tf.reduce_all(chars.with_flat_values(fits), axis=1)
        in_written = tf.gather(written, rows) & in_run
        cells = (self._first_cell + tf.boolean_mask(letter, in_written & wants_letter) * len(self.squares)
                 + tf.boolean_mask(square, in_written & tf.logical_not(wants_letter)))
        cells = tf.RaggedTensor.from_row_lengths(cells, tf.where(written, tf.constant(WORD_LENGTH, tf.int64), 0))
        beginning = tf.ragged.boolean_mask(chars, chars.with_flat_values(tf.logical_not(in_run)))
        split = tf.concat([self._words_or_chars(beginning), cells], axis=1)
        return _rows_where(written, split, self._words_or_chars(chars))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (what ``save`` writes and ``from_dict`` reads back)."""
        return {"format": FORMAT, "version": FORMAT_VERSION, "name": self.name, "words": list(self.words),
                "letters": self.letters, "squares": self.squares, "specials": list(self.SPECIALS)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "WordBoardTokenizer":
        """The tokenizer ``to_dict`` described; a wrong format, version, special set or field raises ``ValueError``.

        >>> WordBoardTokenizer.from_dict(WordBoardTokenizer(["crane"]).to_dict()) == WordBoardTokenizer(["crane"])
        True
        """
        for field, want in (("format", FORMAT), ("version", FORMAT_VERSION), ("specials", list(cls.SPECIALS))):
            if d.get(field) != want:
                raise ValueError(f"WordBoardTokenizer description: field {field!r} is {d.get(field)!r}, "
                                 f"expected {want!r}")
        for field in ("name", "letters", "squares"):
            if not isinstance(d.get(field), str):
                raise ValueError(f"WordBoardTokenizer description: field {field!r} must be a string, "
                                 f"got {d.get(field)!r}")
        if not isinstance(d.get("words"), list):
            raise ValueError(f"WordBoardTokenizer description: field 'words' must be a list, got {d.get('words')!r}")
        return cls(d["words"], d["name"], d["letters"], d["squares"])

    def save(self, path: str | os.PathLike) -> None:
        """Writes the tokenizer as UTF-8 JSON to ``path`` (for checkpoints)."""
        write_json_object(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "WordBoardTokenizer":
        """Reads a tokenizer written by ``save``; errors name the file."""
        return from_json_file(cls.from_dict, path)


def written_cells(guess: str, squares: str) -> str:
    """A guess and its feedback squares written out as cells, letter then square (what ``decode`` prints for
    them and ``WordBoardTokenizer.encode_observation`` reads back as cells).

    >>> written_cells("crane", "⬛🟨⬛⬛🟩")
    'c⬛r🟨a⬛n⬛e🟩'
    """
    if len(guess) != len(squares):
        raise ValueError(f"written_cells: guess {guess!r} and squares {squares!r} differ in length")
    return "".join(letter + square for letter, square in zip(guess, squares))


def _rows_where(condition: "tf.Tensor", chosen: Any, otherwise: "tf.RaggedTensor") -> "tf.RaggedTensor":
    """Row ``i`` of ``chosen`` where ``condition[i]``, else row ``i`` of ``otherwise`` (both ``[N, None]``)."""
    import tensorflow as tf

    if not isinstance(chosen, tf.RaggedTensor):
        chosen = tf.RaggedTensor.from_tensor(chosen)
    picked = tf.ragged.boolean_mask(chosen, chosen.with_flat_values(tf.repeat(condition, chosen.row_lengths())))
    kept = otherwise.with_flat_values(tf.repeat(tf.logical_not(condition), otherwise.row_lengths()))
    return tf.concat([picked, tf.ragged.boolean_mask(otherwise, kept)], axis=1)


def word_board_tokenizer(word_list: str) -> WordBoardTokenizer:
    """``WordBoardTokenizer`` of a named word list (``rlds_lang.wordle.words.resolve_word_list``), named
    ``<list>_board``.

    >>> word_board_tokenizer("demo_words").name
    'demo_words_board'
    """
    from rlds_lang.wordle.words import resolve_word_list

    return WordBoardTokenizer(resolve_word_list(word_list).words, name=f"{word_list}_board")


def lmrl_gym_board_tokenizer() -> WordBoardTokenizer:
    """``WordBoardTokenizer`` of LMRL-Gym's 431-word list (``rlds_lang.wordle.words.lmrl_gym_words``)."""
    from rlds_lang.wordle.words import lmrl_gym_words

    return WordBoardTokenizer(lmrl_gym_words().words, name="lmrl_gym_board")


__all__ = ["FORMAT", "WordBoardTokenizer", "lmrl_gym_board_tokenizer", "word_board_tokenizer", "written_cells"]
