"""check_episode: the RLDS invariants, with errors naming the episode and the step."""

import copy

import pytest

from rlds_lang.schema import EpisodeInvariantError, check_episode, neutral_like


def _episode():
    def step(i, last):
        return {"observation": {"text": f"o{i}"}, "action": "" if last else f"a{i}", "reward": 0.0 if last else -1.0,
                "discount": 0.0 if last else 1.0, "is_first": i == 0, "is_last": last, "is_terminal": last}

    return {"episode_id": "ep7", "steps": [step(0, False), step(1, False), step(2, True)]}


def test_valid_episode_passes_in_both_layouts():
    ep = _episode()
    check_episode(ep)
    columnar = {k: [s[k] for s in ep["steps"]] for k in ep["steps"][0] if k != "observation"}
    columnar["observation"] = {"text": [s["observation"]["text"] for s in ep["steps"]]}
    check_episode({"episode_id": "ep7", "steps": columnar})


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda s: s[1].update(is_first=True), "episode ep7, step 1: is_first=True"),
        (lambda s: s[0].update(is_first=False), "episode ep7, step 0: is_first=False"),
        (lambda s: s[1].update(is_last=True), "episode ep7, step 1: is_last=True"),
        (lambda s: s[2].update(is_last=False), "episode ep7, step 2: is_last=False"),
        (lambda s: s[0].update(is_terminal=True), "episode ep7, step 0: is_terminal is set before the last step"),
        (lambda s: s[2].update(action="late"), r"episode ep7, step 2 \(is_last\): action must be empty"),
        (lambda s: s[2].update(reward=1.0), r"step 2 \(is_last\): reward must be 0.0"),
        (lambda s: s[2].update(discount=1.0), r"step 2 \(is_last\): discount must be 0.0"),
        (lambda s: s[1].pop("reward"), r"episode ep7, step 1: missing \['reward'\]"),
    ],
)
def test_violations_name_episode_and_step(mutate, message):
    ep = copy.deepcopy(_episode())
    mutate(ep["steps"])
    with pytest.raises(EpisodeInvariantError, match=message):
        check_episode(ep)


def test_empty_episode_is_rejected():
    with pytest.raises(EpisodeInvariantError, match="episode x: has no steps"):
        check_episode({"steps": []}, episode_id="x")


def test_neutral_values():
    import numpy as np

    assert neutral_like("guess") == ""
    assert neutral_like({"text": "a", "ids": np.array([1, 2])})["text"] == ""
    assert not neutral_like(np.array([1.5, 2.0])).any()
