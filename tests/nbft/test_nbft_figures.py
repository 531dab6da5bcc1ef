"""The nbft stage's figures."""

import pandas as pd

from collat.nbft.figures import gamma_heatmaps


def test_gamma_heatmaps_without_a_measurement_say_so():
    import matplotlib.pyplot as plt

    empty = pd.DataFrame(columns=["operation", "channel", "P", "size", "target", "gamma"])
    fig = gamma_heatmaps(empty, "bcast", ["cache"])
    assert [t.get_text().split(":")[0] for t in fig.texts] == ["no NBFT measurement of bcast"]
    plt.close(fig)
