"""Two-role Wordle: turn order and send-backs, each role's reward, scripted strengths, recording as RLDS through
loggers (per-role returns recomputed from the record), and response trees with a reward per role."""

import numpy as np
import pytest

from loggers import read_episodes
from loggers.record import record
from loggers.trees import TreeSpec, record_trees
from rlds_lang.env import InvalidActionError, run_episode
from rlds_lang.trees import rebuild_trees
from rlds_lang.wordle_roles.env import (MISJUDGE_COST, SENDBACK_COST, ProposerCheckerEnv, board_history,
                                        episode_role_returns)
from rlds_lang.wordle_roles.policies import RoleTeam, ScriptedChecker, ScriptedProposer, scripted_team


class Fixed:
    """Plays a fixed list of actions."""

    name = "fixed"

    def __init__(self, actions):
        self.actions = list(actions)

    def reset(self, seed):
        pass

    def act(self, observations, actions):
        return self.actions[len(actions)]

    def params(self):
        return {}


def _env(k=1):
    env = ProposerCheckerEnv(max_sendbacks=k)
    env.game.set_next_answer("crane")
    return env


def test_turns_send_backs_and_each_role_s_reward():
    env = _env(k=1)
    timestep = env.reset()
    assert env.acting_agent() == 0 and timestep.observation["text"] == "propose"
    timestep = env.step("fuzzy")
    assert env.acting_agent() == 1 and timestep.observation["proposal_fits"] == 1  # nothing played yet: fits
    timestep = env.step("reject")  # a proposal that fits sent back: both roles pay
    np.testing.assert_allclose(env.agent_rewards(), [-SENDBACK_COST, -MISJUDGE_COST])
    assert timestep.reward == 0.0 and env.acting_agent() == 0 and timestep.observation["sendbacks"] == 1
    timestep = env.step("slate")  # K=1 send-back used: played without a check
    assert timestep.reward == -1.0 and env.acting_agent() == 0 and timestep.observation["turn"] == 1
    np.testing.assert_allclose(env.agent_rewards(), [-1.0, -1.0])
    text, played, feedback = (timestep.observation[k] for k in ("text", "played", "feedback"))
    squares = "".join("⬛🟨🟩"[int(v)] for v in feedback)
    assert played == "slate" and text == "propose" + "".join(a + b for a, b in zip("slate", squares))
    env.step("fuzzy")
    assert env.acting_agent() == 1 and env._observation["proposal_fits"] == 0  # slate's feedback rules it out
    env.step("accept")  # accepting a proposal that cannot win: the checker pays
    np.testing.assert_allclose(env.agent_rewards(), [-1.0, -1.0 - MISJUDGE_COST])
    env.step("crane")
    timestep = env.step("accept")
    assert timestep.last() and timestep.reward == 0.0
    np.testing.assert_allclose(env.agent_rewards(), [0.0, 0.0])
    assert [g for g, _ in board_history([timestep.observation])] == ["crane"]



def test_the_checker_sees_the_proposal_marked_by_the_board():
    """``checker_view="marked"``: the checker's text is the proposal as cells marked by the board
    (``Constraints.marks``), and a proposal with a ruled-out cell never fits; ``"board"``: the checker sees the
    proposer's board."""
    from rlds_lang.wordle import game

    seen = {"fits": 0, "ruled out": 0, "unmarked misfit": 0}
    for view in ("marked", "board"):
        env = ProposerCheckerEnv(max_sendbacks=1, checker_view=view)
        for seed in range(12):
            episode = run_episode(env, scripted_team("weak", "weak"), seed=seed)
            obs = episode.observations
            for t in range(1, len(obs)):
                if int(obs[t]["agent"]) != 1:
                    continue
                assert obs[t - 1]["text"].startswith("propose") and obs[t]["text"].startswith("check")
                board, check = obs[t - 1]["text"][len("propose"):], obs[t]["text"][len("check"):]
                if view == "board":
                    assert check == board
                    continue
                history = [(g, game.pattern_from_id(p)) for g, p in board_history(obs[:t + 1])]
                proposal, fits = str(obs[t]["proposal"]), int(obs[t]["proposal_fits"]) == 1
                assert check[::2] == proposal
                assert check[1::2] == game.constraints_from_history(history).marks(proposal)
                ruled_out = "⬛" in check[1::2]
                assert not (fits and ruled_out)
                seen["fits" if fits else "ruled out" if ruled_out else "unmarked misfit"] += 1
        assert env.episode_metadata()["checker_view"] == view
    assert seen["fits"] > 5 and seen["ruled out"] > 5, seen  # both cases met
    with pytest.raises(ValueError, match="checker_view"):
        ProposerCheckerEnv(checker_view="letters")


def test_bad_actions_are_refused_with_the_action_named():
    env = _env()
    env.reset()
    with pytest.raises(InvalidActionError, match="'accept'"):
        env.step("accept")  # the proposer must propose a guess
    env.step("slate")
    with pytest.raises(InvalidActionError, match="checker action 'slate'"):
        env.step("slate")


def test_reward_ranges_bound_every_role_s_return():
    env = ProposerCheckerEnv(max_sendbacks=2)
    (p_low, p_high), (c_low, c_high) = env.agent_reward_ranges()
    assert (p_low, c_low) == (-6 - SENDBACK_COST * 12, -6 - MISJUDGE_COST * 18) and p_high == c_high == 0.0
    worst = RoleTeam([ScriptedProposer(0.0), ScriptedChecker(0.0)])  # random guesses, coin-flip checks
    for seed in range(5):
        episode = run_episode(env, worst, seed=seed)
        env.seed(seed)
        env.reset()
        total = np.zeros(2)
        for action in episode.actions:
            env.step(action)
            total += env.agent_rewards()
        assert p_low <= total[0] <= 0.0 and c_low <= total[1] <= 0.0
        assert -6.0 <= episode.total_reward <= 0.0


def test_scripted_strengths_are_ordered():
    env = ProposerCheckerEnv()
    mean = lambda team: np.mean([run_episode(env, team, seed=s).total_reward for s in range(40)])  # noqa: E731
    weak, strong = mean(scripted_team("weak", "weak")), mean(scripted_team("strong", "strong"))
    assert weak < strong - 1.0
    # the checker matters: a weak proposer does better with a perfect checker than with a coin-flipping one
    assert mean(scripted_team("weak", "strong")) > weak


def test_recorded_as_rlds_with_each_role_s_return(tmp_path):
    env = ProposerCheckerEnv(max_sendbacks=1)
    team = scripted_team("medium", "medium")
    record(env, team, 3, tmp_path / "logs", seed=5, progress=False)
    episodes = list(read_episodes(tmp_path / "logs"))
    assert len(episodes) == 3
    for i, episode in enumerate(episodes):
        played = run_episode(env, team, seed=5 + i)  # the same seeded game, played again
        steps = episode["steps"]
        assert [s["action"] for s in steps[:-1]] == played.actions
        assert [int(s["observation"]["agent"]) for s in steps[:-1]] == [
            0 if a not in ("accept", "reject") else 1 for a in played.actions]
        returns = episode_role_returns(steps, env.max_sendbacks)
        env.seed(5 + i)
        env.reset()
        total = np.zeros(2)
        for action in played.actions:
            env.step(action)
            total += env.agent_rewards()
        np.testing.assert_allclose(returns, total)


def test_trees_carry_a_reward_per_role(tmp_path):
    env = ProposerCheckerEnv(max_sendbacks=1)
    spec = TreeSpec(branching=2, branch_depth=2, reward_range=env.agent_reward_ranges(),
                    pair_method="positive_negative")
    result = record_trees(env, scripted_team("weak", "weak"), spec, 3, tmp_path / "trees", seed=1)
    trees = rebuild_trees(read_episodes(tmp_path / "trees"))  # rewards read back from the agent_rewards field
    assert all(t.num_agents == 2 for t in trees) and len(trees) == result.num_trees
    assert {int(a) for t in trees for a in t.agent} == {0, 1}
    differ = [t for t in trees if not np.array_equal(t.rewards[:, 0], t.rewards[:, 1])]
    assert differ  # the roles' own costs make their rewards differ somewhere


def test_a_scripted_member_of_a_batched_team_draws_afresh_at_every_step():
    """``RoleTeam.act_batch`` seeds a member without its own ``act_batch`` from the game's seed and the step, as
    a language-model member's draws are: a random proposer does not propose the same word every turn."""
    from rlds_lang.wordle.policies import child_seed

    team = RoleTeam([ScriptedProposer(0.0, answers="demo_words", guesses="demo_words"),
                     ScriptedChecker(1.0, answers="demo_words", guesses="demo_words")])
    env = ProposerCheckerEnv(answers="demo_words", guesses="demo_words")
    env.seed(5)
    observations, actions = [env.reset().observation], []
    proposals = []
    for _ in range(12):
        action = team.act_batch([(observations, actions)], seeds=[5])[0]
        alone = team.member_of(observations)
        alone.reset(child_seed(5, len(actions)))
        assert action == alone.act(observations, actions)  # the seed of this game and step
        if int(observations[-1]["agent"]) == 0:
            proposals.append(action)
        timestep = env.step(action)
        observations.append(timestep.observation)
        actions.append(action)
        if timestep.last():
            break
    assert len(set(proposals)) > 1, proposals
