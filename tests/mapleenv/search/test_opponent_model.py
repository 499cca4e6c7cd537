"""Search's policy opponent model on real battles: the shipped agent's network in the
opponent's seat of each world gives probabilities over that world's legal choices, the
replies follow them, and a searcher that uses them keeps to legal, repeatable choices."""

from __future__ import annotations

from pathlib import Path

import pytest
from poke_env.data import to_id_str

from mapleenv.policies import (
    load_checkpoint,
    policy_from_snapshot,
    snapshot_encoder,
    snapshot_mask_futile,
)
from mapleenv.search import (
    PolicyOpponentModel,
    SearchConfig,
    Searcher,
    SearchHost,
    SearchRefused,
    host_settings,
    host_view,
)
from mapleenv.search.mirror import foe_battle
from tests.mapleenv.search.test_search import mid_battle_decisions

pytestmark = pytest.mark.integration

SHIPPED = Path(__file__).resolve().parents[3] / "models" / "attention_ppo_gen9random.pt"


@pytest.fixture(scope="module")
def model() -> PolicyOpponentModel:
    snapshot = load_checkpoint(SHIPPED)
    policy = policy_from_snapshot(snapshot).eval()
    return PolicyOpponentModel(policy, snapshot_encoder(snapshot), snapshot_mask_futile(snapshot))


def test_priors_are_over_each_worlds_legal_choices_for_the_opponents_seat(model) -> None:
    decisions = list(mid_battle_decisions(seed=12, count=4))
    with SearchHost() as host:
        host.request("warm", format="gen9randombattle")
        for decision in decisions:
            view = decision.view
            requests = host.request("foe_requests", view=host_view(view), seed=5, worlds=2)
            requests = requests["requests"]
            priors = model.priors(view, requests)
            assert len(priors) == 2 and all(p is not None for p in priors), priors
            world = host.request("world", view=host_view(view), seed=5)  # the first world
            assert set(priors[0]) <= set(world["foe"]), (priors[0], world["foe"])
            for request, prior in zip(requests, priors, strict=True):
                assert sum(prior.values()) == pytest.approx(1.0, abs=1e-4)
                mirror = foe_battle(view["log"], "p2", request, gen=9)
                foe_active = next(m for m in view["foe"]["pokemon"] if m["active"])
                assert mirror.active_pokemon.species == to_id_str(foe_active["species"])


def test_the_replies_are_the_models_likeliest_then_the_greedy_readings(model) -> None:
    (decision,) = mid_battle_decisions(seed=13, count=1)
    with SearchHost() as host:
        view = host_view(decision.view)
        greedy = host.request("world", view=view, seed=2, replies=3)
        assert len(greedy["foe"]) > 3
        # a model sure of a reply the greedy reading does not search
        last = next(
            c
            for c, n in zip(greedy["foe"], greedy["foe_names"], strict=True)
            if n not in greedy["replies"]
        )
        sure = host.request("world", view=view, seed=2, replies=3, foe_prior=[{last: 1.0}])
    named = dict(zip(sure["foe"], sure["foe_names"], strict=True))
    assert sure["by_prior"][0] == named[last]
    assert sure["by_prior"][1:] == greedy["replies"][:2]  # then the greedy reading's


def test_a_searcher_with_the_policy_model_keeps_to_legal_repeatable_choices(model) -> None:
    decisions = list(mid_battle_decisions(seed=14, count=3))
    config = SearchConfig(time_ms=None, sims=40, worlds=2, confident=1.0, opponent="policy")
    first = Searcher(config, opponent_model=model)
    second = Searcher(config, opponent_model=model)
    try:
        picks, again = first.choose(decisions), second.choose(decisions)
    finally:
        first.close()
        second.close()
    for decision, pick in zip(decisions, picks, strict=True):
        assert str(pick) in decision.view["choices"]
    assert picks == again
    assert first.stats.searched == 3 and first.stats.sims == 3 * 40
    assert first.stats.modelled == 3 and first.stats.fallbacks == 0


class _SpyHost(SearchHost):
    """A real search host that keeps what each search was asked."""

    sent: list[dict] = []

    def submit(self, cmd: str, **kwargs) -> None:
        if cmd == "search":
            self.sent.append(kwargs)
        super().submit(cmd, **kwargs)


def test_the_models_time_counts_in_the_decisions_time_budget(model) -> None:
    (decision,) = mid_battle_decisions(seed=15, count=1)
    config = SearchConfig(time_ms=3000, sims=20, worlds=2, confident=1.0, opponent="policy")
    _SpyHost.sent = []
    searcher = Searcher(config, host_factory=_SpyHost, opponent_model=model)
    try:
        searcher.choose([decision])
    finally:
        searcher.close()
    (sent,) = _SpyHost.sent
    assert searcher.stats.modelled == 1 and searcher.stats.model_ms > 0
    # what the host was given is what the model left of the decision's 3 s (at least 1 ms)
    left = max(1.0, 3000 - searcher.stats.model_ms)
    assert sent["time_ms"] == pytest.approx(left, abs=1e-6) and sent["time_ms"] < 3000


def test_the_model_weighs_the_scores_by_its_prior() -> None:
    """With all of the opponent model on the prior (``prior_share`` 1) and the prior sure of
    one reply, each choice's score is its score against that reply alone: the same as a
    search that plays only that reply (one pass each, the same seeds)."""
    (decision,) = mid_battle_decisions(seed=15, count=1)
    view = host_view(decision.view)
    own = list(decision.view["choices"].values())[:3]

    def settings(**fields) -> dict:
        config = SearchConfig(time_ms=None, worlds=2, rollout_turns=1, **fields)
        return {"view": view, "own": own, "seed": 8, **host_settings(config)}

    with SearchHost() as host:
        sure = host.request("world", view=view, seed=8, replies=3)["foe"][-1]
        prior = [{sure: 1.0}, {sure: 1.0}]
        policy = {"opponent": "policy", "foe_prior": prior}
        wide = settings(replies=3, sims=2 * 3 * 3, prior_share=1.0, opponent="policy")
        wide = host.request("search", **wide, foe_prior=prior)
        alone = host.request("search", **settings(replies=1, sims=2 * 3) | policy)
        spread = host.request("search", **settings(replies=3, sims=2 * 3 * 3, uniform=1.0))
    assert wide["q"] == pytest.approx(alone["q"])
    assert wide["q"] != pytest.approx(spread["q"])  # an even spread over three replies differs


def test_a_search_naming_the_worlds_foe_requests_built_plays_those_worlds(model) -> None:
    """The worlds ``foe_requests`` built are kept under the handle it returns: a search that
    names it scores exactly as one whose worlds are built anew; a handle is taken once, for
    the view and seed it was built for, and only the last 16 are kept."""
    decisions = list(mid_battle_decisions(seed=16, count=2))
    config = SearchConfig(time_ms=None, sims=30, worlds=2, rollout_turns=1, replies=3)
    with SearchHost() as kept, SearchHost() as fresh:
        for decision in decisions:
            view = host_view(decision.view)
            own = list(decision.view["choices"].values())[:3]
            request = {"view": view, "own": own, "seed": 3, **host_settings(config)}
            built = kept.request("foe_requests", view=view, seed=3, worlds=2)
            request["foe_prior"] = model.priors(decision.view, built["requests"])
            after = kept.request("search", **request, worlds_id=built["worlds_id"])
            assert after["q"] == fresh.request("search", **request)["q"]
            with pytest.raises(SearchRefused, match="are not kept"):
                kept.request("search", **request, worlds_id=built["worlds_id"])
            other = kept.request("foe_requests", view=view, seed=3, worlds=2)["worlds_id"]
            with pytest.raises(SearchRefused, match="built for another view, seed"):
                kept.request("search", **request | {"seed": 4}, worlds_id=other)
        first = kept.request("foe_requests", view=view, seed=3, worlds=1)["worlds_id"]
        for _ in range(16):
            kept.request("foe_requests", view=view, seed=3, worlds=1)
        with pytest.raises(SearchRefused, match="past the last 16 kept"):
            kept.request("dump_worlds", view=view, own=own, seed=3, worlds=1, worlds_id=first)
