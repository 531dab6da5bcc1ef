"""Figure helpers, by hand (the figures themselves are drawn by the study run and looked at)."""

import numpy as np
import pandas as pd

from collat import figures as fg


def test_annotated_cells_label_every_value_with_a_readable_colour():
    import matplotlib.pyplot as plt

    table = pd.DataFrame([[0.95, np.nan], [-1.3, 0.0]], index=["linear (1)", "chain (2)"], columns=["core", "node"])
    fig, ax = plt.subplots()
    fg._annotated_cells(ax, table, "RdYlGn", -1.0, 1.0)
    texts = {(t.get_position(), t.get_text()): t.get_color() for t in ax.texts}
    # rows top to bottom, the true value printed (-1.30, not the clipped -1), NaN left blank
    assert set(texts) == {((0.5, 0.5), "0.95"), ((0.5, 1.5), "-1.30"), ((1.5, 1.5), "0.00")}
    # dark green and dark red cells take white, the pale yellow middle black
    assert texts[((0.5, 0.5), "0.95")] == "white" and texts[((0.5, 1.5), "-1.30")] == "white"
    assert texts[((1.5, 1.5), "0.00")] == "black"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["linear (1)", "chain (2)"]
    assert ax.get_ylim() == (2.0, 0.0)
    plt.close(fig)
