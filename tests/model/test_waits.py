"""A reduce sender's share of its wait, read from the NBFT stage's flat fan-ins (collat.model.waits)."""

import numpy as np
import pandas as pd
import pytest

from collat.model.costs import ChannelCosts
from collat.model.waits import flat_fanins, wait_shares


def two_channels(sizes=(1.0,)):
    """core / node: one message 1 / 4 us, NBFT with n receivers 0.5 + 0.5 n / 2 + 2 n, at every size."""
    S = len(sizes)
    p2p, alpha, beta = (np.repeat(np.array([[a], [b]]), S, axis=1) for a, b in ((1.0, 4.0), (0.5, 2.0), (0.5, 2.0)))
    table = alpha[:, :, None] + beta[:, :, None] * np.arange(8.0)
    table[:, :, 0] = 0.0
    return ChannelCosts(["core", "node"], sizes, p2p, alpha, beta, table, [lambda m: np.asarray(m, float)] * 2)


def medians(rows):
    return pd.DataFrame(rows, columns=["operation", "channel", "size", "P", "target", "latency"])


def test_hand_computed_flat_fanin_p3():
    """Root 0 takes 1 then 2 over core: its fan-in 0.5 + 0.5 x 2 = 1.5 from 0. Each sender's own time
    is its gap, 0.5; message 1 is taken at 0.5 + 0.5 (gap and alpha), message 2 at 1 + 0.5: waits of
    0.5 and 1. q = 0: 1.5, 0.5, 0.5; q = 1: 1.5, 1, 1.5."""
    q0, q1 = flat_fanins(two_channels(), 0, [3])
    assert q0[0, 0] == pytest.approx(2.5 / 3) and q1[0, 0] == pytest.approx(4 / 3)


def test_the_share_that_meets_the_measured_avg():
    """Measured avg (1.5 + 0.5 + 0.4 x 0.5 + 0.5 + 0.4 x 1) / 3 over core: q = 0.4; node unmeasured:
    NaN (the eager/rendezvous rule then applies)."""
    costs = two_channels()
    q = wait_shares(costs, medians([("reduce", "core", 1, 3, "avg", 3.1 / 3), ("reduce", "core", 1, 3, "max", 1.5),
                                    ("bcast", "node", 1, 3, "avg", 9.0)]))
    assert q[0, 0] == pytest.approx(0.4) and np.isnan(q[1, 0])
    costs.wait_shares = q
    assert costs.waits()[:, 0] == pytest.approx([0.4, 0.0])  # node: the rule (no eager limit: eager, 0)


def test_shares_are_clipped_and_carried_to_sizes_between():
    """Below the eager price (0.7 < 2.5 / 3) the share is 0, above the rendezvous one 1; size 4, not
    measured, takes size 2's avg scaled by the point-to-point ratio 4 / 2: 2 x (3.1 / 3) against the
    same prices (every size costs alike here), 1 after clipping."""
    costs = two_channels((1.0, 2.0, 4.0))
    q = wait_shares(costs, medians([("reduce", "core", 1, 3, "avg", 0.7), ("reduce", "core", 2, 3, "avg", 3.1 / 3),
                                    ("reduce", "node", 1, 3, "avg", 10.0)]))
    assert q[0].tolist() == pytest.approx([0.0, 0.4, 1.0])
    assert q[1].tolist() == [1.0, 1.0, 1.0]  # node: 10 us beyond any wait, sizes 2 and 4 from size 1


def test_runs_larger_than_the_machine_are_left_out():
    """The costs price fan-outs of up to 7 receivers (their table): an NBFT run of P = 9 is beyond
    the machine the config describes and is not used; the share comes from P = 3 alone."""
    q = wait_shares(two_channels(), medians([("reduce", "core", 1, 3, "avg", 3.1 / 3),
                                             ("reduce", "core", 1, 9, "avg", 100.0)]))
    assert q[0, 0] == pytest.approx(0.4)
