"""Per-request sampling: each row uses its own parameters (the chapter's exercise 3 bug) and its own seed."""

import numpy as np
import pytest

from core.batch.sampling import SamplingParams, filtered_probs, prepare, sample


def _logits(rows: int, vocab: int = 50, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(rows, vocab)) * 3


def _args(params: list[SamplingParams]):
    return prepare(params, [p.make_rng() for p in params])


def test_greedy_row_ignores_its_neighbours_temperature():
    """A greedy row returns its argmax whatever temperatures the other rows ask for."""
    logits = _logits(4)
    for hot in (0.5, 1.0, 5.0, 50.0):
        params = [
            SamplingParams(temperature=hot, seed=1),
            SamplingParams(),
            SamplingParams(temperature=hot, seed=2),
            SamplingParams(),
        ]
        for _ in range(20):
            tokens = sample(logits, _args(params))
            assert tokens[1] == logits[1].argmax() and tokens[3] == logits[3].argmax()


def test_one_temperature_for_the_whole_batch_is_caught():
    """The buggy sampler (first row's temperature for all rows) breaks the greedy row; ours does not."""
    logits = np.array([[0.0, 0.1, 0.2, 5.0], [1.0, 0.9, 0.0, 0.0]])
    params = [SamplingParams(temperature=20.0, seed=3), SamplingParams()]
    buggy_probs = np.exp(logits / 20.0) / np.exp(logits / 20.0).sum(axis=1, keepdims=True)
    assert buggy_probs[1].max() < 0.5  # the bug would sample row 1 at random
    probs = filtered_probs(logits, _args(params))
    assert probs[1].tolist() == [1.0, 0.0, 0.0, 0.0]


def test_seeded_rows_are_reproducible_and_differ_by_seed():
    """The same seed gives the same token stream; another seed another stream."""
    logits = _logits(1, seed=5)

    def stream(seed):
        p = SamplingParams(temperature=1.0, seed=seed)
        args = prepare([p], [p.make_rng()])
        return [int(sample(logits, args)[0]) for _ in range(30)]

    assert stream(11) == stream(11)
    assert stream(11) != stream(12)


def test_top_k_and_top_p_limit_the_support():
    """top-k keeps the k best tokens; top-p the smallest prefix reaching p."""
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]]))
    topk = filtered_probs(logits, _args([SamplingParams(temperature=1.0, top_k=2)]))
    assert np.count_nonzero(topk) == 2 and topk[0, :2].sum() == pytest.approx(1)
    topp = filtered_probs(logits, _args([SamplingParams(temperature=1.0, top_p=0.75)]))
    assert np.flatnonzero(topp[0]).tolist() == [0, 1]
    tokens = {int(sample(logits, _args([SamplingParams(temperature=1.0, top_p=0.75, seed=s)]))[0]) for s in range(40)}
    assert tokens == {0, 1}


@pytest.mark.parametrize(
    "kw,message", [({"temperature": -1}, "temperature"), ({"top_k": -2}, "top_k"), ({"top_p": 0}, "top_p")]
)
def test_bad_params_name_the_field(kw, message):
    """Invalid sampling parameters are rejected naming the field."""
    with pytest.raises(ValueError, match=message):
        SamplingParams(**kw)
