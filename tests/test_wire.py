"""loggers.wire writes the message EnvLogger's codec builds: equal after parsing, for random nested values and
the corner cases of the codec (scalar marker, packed and big-endian buffers, empty containers, fallbacks)."""

import dm_env
import numpy as np
import pytest
from envlogger import step_data
from envlogger.converters import codec
from envlogger.proto import storage_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from loggers import wire

NUMPY_SCALARS = [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                 np.uint64]


def _same_message(value):
    expected = codec.encode(value)
    got = wire.encode(value)
    assert storage_pb2.Data.FromString(got) == expected, repr(value)[:200]
    return expected, got


TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["", "\x00", "a\x00", "🟩🟨⬛", "👩‍👩‍👧 é ✓", "\u200b\ufeff"]) | st.integers(0, 300).map(lambda n: "é" * (n // 2) + "x" * (n % 2))
LEAVES = st.one_of(
    TEXT, st.binary(max_size=12), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
    st.tuples(st.sampled_from(NUMPY_SCALARS), st.integers(0, 127)).map(lambda p: p[0](p[1])),
    st.floats(width=32, allow_nan=False).map(np.float32), st.integers(-2**31, 2**31 - 1).map(np.int32), st.none(),
    st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=6).map(lambda v: np.array(v, np.int32)),
    st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=6).map(lambda v: np.array(v, np.int64)),
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=6).map(lambda v: np.array(v, np.uint64)),
    st.lists(st.integers(-128, 127), min_size=1, max_size=6).map(lambda v: np.array(v, np.int8)),
    st.lists(st.integers(0, 65535), min_size=1, max_size=6).map(lambda v: np.array(v, np.uint16).reshape(-1, 1)),
    st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=6).map(lambda v: np.array(v, np.float32)),
    st.lists(st.floats(allow_nan=False), min_size=1, max_size=6).map(lambda v: np.array(v, np.float64)),
    st.lists(st.booleans(), min_size=1, max_size=6).map(np.array),
    st.lists(TEXT, min_size=1, max_size=4).map(np.array),
)
VALUES = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4).filter(lambda v: len({type(x) for x in v}) <= 1),
    st.tuples(inner, inner),
    st.dictionaries(TEXT, inner, max_size=4),
), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_random_nested_values_parse_to_the_codecs_message(value):
    _same_message(value)


@pytest.mark.parametrize("value", [
    "", "a\x00", "émoji👩‍👩‍👧", b"", b"\x00x", np.str_("z"), np.bytes_(b"q"), True, np.bool_(False), 0, -1,
    2**70, -2**70, 255, 1.5, -0.0, dm_env.StepType.LAST, np.float32(1.5), np.float64(-2), np.int8(-3), np.int16(300),
    np.uint8(200), np.uint16(65000), np.int32(-5), np.int64(2**40), np.uint32(7), np.uint64(2**63),
    np.array(3.0), np.array("x"), np.array([[1, -2], [3, 4]], np.int64), np.array([b"x", b""]),
    np.array([[1, 2, 3]], np.uint8), np.array([], np.float32), np.array([], np.int64), np.zeros((2, 0)),
    [], (), ((),), (None, 1), [np.int32(1), np.int32(2)], {"": 1}, {"a": None}, {"a": []}, {"a": {}}, {1: "x"},
    {"k": [{"x": np.array([1, 2], np.uint16)}]}, "x" * 110, "x" * 200, {"y" * 200: "z" * 200},
], ids=repr)
def test_corner_cases_serialize_byte_for_byte_like_the_codec(value):
    expected, got = _same_message(value)
    if not (isinstance(value, dict) and len(value) > 1):  # one-entry maps serialize in one order only
        assert got == expected.SerializeToString()


def test_a_logged_step_parses_to_the_codecs_message():
    observation = {"text": "🟩🟨⬛⬛🟩", "feedback": np.array([2, 1, 0, 0, 2], np.int8), "turn": np.int32(3)}
    for data in (step_data.StepData(dm_env.restart(observation), None, None),
                 step_data.StepData(dm_env.transition(-1.0, observation, 1.0), "crane", {"valid": True}),
                 step_data.StepData(dm_env.termination(0.0, observation), "", {"answer_left": np.int64(5)})):
        _same_message(data)


@pytest.mark.parametrize("value", [[1, "a"], np.array([1.0], np.float16), np.array(["a"], dtype=object),
                                   np.float16(1), object()],
                         ids=lambda value: "object()" if type(value) is object else repr(value))
def test_values_the_codec_refuses_raise_its_error(value):
    with pytest.raises(TypeError) as expected:
        codec.encode(value)
    with pytest.raises(TypeError) as got:
        wire.encode(value)
    assert str(got.value) == str(expected.value)


def test_prebuilt_elements_make_lists_and_tuples():
    items = ["a", np.int32(2), {"b": 1.0}]
    encoded = [wire.encode(x) for x in items]
    assert storage_pb2.Data.FromString(wire.encoded_tuple(encoded)) == codec.encode(tuple(items))
    assert storage_pb2.Data.FromString(wire.encoded_list(encoded[:1] * 3)) == codec.encode(["a"] * 3)
    assert wire.encoded_list([]) == wire.encoded_tuple([]) == b"" == codec.encode([]).SerializeToString()


def test_cached_encodings_keep_values_that_compare_equal_apart():
    # the writers cache repeated scalars: 0.0 == -0.0 and 1.0 == np.float32(1.0) must still encode apart
    for value in (0.0, -0.0, np.float64(-0.0), 1.0, np.float32(1.0), np.float64(1.0), True, 1, "1", np.str_("1")):
        assert storage_pb2.Data.FromString(wire.encode(value)) == codec.encode(value), repr(value)
    assert wire.encode(-0.0) != wire.encode(0.0)
