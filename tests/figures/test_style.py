"""What every figure shares (collat.figures.style), by hand (the figures themselves are drawn by the study run and looked at)."""

import numpy as np
import pandas as pd

from collat.figures import style as fg


def test_annotated_cells_label_every_value_with_a_readable_colour():
    import matplotlib.pyplot as plt

    table = pd.DataFrame([[0.95, np.nan], [-1.3, 0.0]], index=["linear (1)", "chain (2)"], columns=["core", "node"])
    fig, ax = plt.subplots()
    fg.annotated_cells(ax, table, "RdYlGn", -1.0, 1.0)
    texts = {(t.get_position(), t.get_text()): t.get_color() for t in ax.texts}
    # rows top to bottom, the true value printed (-1.30, not the clipped -1), NaN left blank
    assert set(texts) == {((0.5, 0.5), "0.95"), ((0.5, 1.5), "-1.30"), ((1.5, 1.5), "0.00")}
    # dark green and dark red cells take white, the pale yellow middle black
    assert texts[((0.5, 0.5), "0.95")] == "white" and texts[((0.5, 1.5), "-1.30")] == "white"
    assert texts[((1.5, 1.5), "0.00")] == "black"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["linear (1)", "chain (2)"]
    assert ax.get_ylim() == (2.0, 0.0)
    plt.close(fig)


def test_save_writes_png_and_pdf_of_one_box_that_holds_a_label_outside_the_axes(tmp_path):
    import matplotlib.pyplot as plt
    from PIL import Image

    fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.plot([1, 2], [1, 2])
    ax.legend(["a line"], loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside: "tight" must widen the box
    fg.save(fig, tmp_path / "f.png")
    width, height = Image.open(tmp_path / "f.png").size
    box = [float(v) for v in
           (tmp_path / "f.pdf").read_bytes().split(b"MediaBox [")[1].split(b"]")[0].split()]
    # the PDF's box in points (72 per inch) is the PNG's in pixels at 150 dpi, to a pixel's rounding
    assert abs(box[2] * 150 / 72 - width) <= 1 and abs(box[3] * 150 / 72 - height) <= 1
    assert width > 4 * 150  # wider than the 4-inch figure: the legend is inside the crop
    assert not list(tmp_path.glob("*.tmp*")) and not plt.get_fignums()  # no partial file, figure closed


def test_save_cuts_the_png_from_one_rendering_the_same_as_a_tight_savefig(tmp_path, monkeypatch):
    import matplotlib.figure
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.transforms import Bbox
    from PIL import Image

    def draw():
        fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
        ax.plot([1, 2], [1, 2], label="a line")
        ax.legend(loc="upper left")  # inside the axes: nothing beyond the figure's edge
        ax.set_xlabel("P")
        return fig

    reference = draw()
    reference.set_dpi(150)
    reference.draw_without_rendering()
    pad = reference.get_tightbbox().padded(plt.rcParams["savefig.pad_inches"])
    box = Bbox.from_extents(*(np.r_[np.floor(pad.min * 150), np.ceil(pad.max * 150)] / 150))
    reference.set_layout_engine("none")
    reference.savefig(tmp_path / "tight.png", dpi=150, bbox_inches=box)  # "tight", on whole pixels
    plt.close(reference)
    formats, savefig = [], matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda self, *a, **k: formats.append(k["format"]) or savefig(self, *a, **k))
    fg.save(draw(), tmp_path / "f.png")
    assert formats == ["pdf"]  # the PNG is cut from the drawing that measured the box: no second render
    ours, tight = (np.asarray(Image.open(tmp_path / name)) for name in ("f.png", "tight.png"))
    assert ours.shape == tight.shape and (ours == tight).all()  # the same pixels


def test_validation_scatter_draws_its_scale_beside_the_floor():
    """Per panel: the diagonal and the dotted lines at twice and half the measured; the panel's
    median relative error over its points beside the floor, in words; a prediction beyond the
    measured range drawn on the edge; a split the model has no prediction for says so."""
    import matplotlib.pyplot as plt
    import pytest

    from collat.figures.validation import validation_scatter
    from collat.model.validation import SPLITS

    table = pd.DataFrame({"model": ["hybrid"] * 3 + ["calibrated"], "split": [SPLITS[0]] * 3 + [SPLITS[1]],
                          "measured": [1.0, 10.0, 100.0, 5.0], "predicted": [1.5, 10.0, 1000.0, 5.0], "scored": True})
    fig = validation_scatter(table, 0.05)
    ax = fig.axes[0]
    slopes = sorted(float(np.median(l.get_ydata() / l.get_xdata())) for l in ax.lines)
    assert slopes == pytest.approx([0.5, 1.0, 2.0])
    assert [l.get_linestyle() for l in sorted(ax.lines, key=lambda l: l.get_ydata()[0])] == [":", "-", ":"]
    # |1.5-1|/1, 0, |1000-100|/100: median 0.5, beside the floor
    assert ax.texts[0].get_text() == "median rel. error 0.50\n(floor 0.050; 3 cells)"
    assert ax.collections[0].get_offsets()[:, 1].max() == pytest.approx(100.0)  # 1000 drawn on the edge
    assert fig.axes[1].texts[0].get_text() == "cannot predict"  # another model has a fold of this split
    assert fig.axes[2].texts[0].get_text() == "no such split in these data"
    plt.close(fig)
    # the slowest rank drawn, with no repeated runs to give a floor
    fig = validation_scatter(table, float("nan"), target="max")
    assert fig.axes[0].get_ylabel() == "hybrid\npredicted max [µs]" and "target max" in fig.texts[0].get_text()
    assert fig.axes[0].texts[0].get_text() == "median rel. error 0.50\n(no repeated runs; 3 cells)"
    plt.close(fig)


def test_same_limits_are_the_shared_axes_autoscale_without_sharing():
    import matplotlib.pyplot as plt

    def draw(axes):
        axes[0].plot([0.0, 10.0], [1.0, 10.0])
        axes[1].plot([5.0, 20.0], [10.0, 1000.0])
        for ax in axes:
            ax.set_yscale("log")

    fig, axes = plt.subplots(1, 2)
    draw(axes)
    fg.same_limits(axes, "xy")
    # x: data 0..20, 5 % of the range each side; y (log): decades 0..3, 5 % of three decades each side
    for ax in axes:
        assert np.allclose(ax.get_xlim(), (-1.0, 21.0))
        assert np.allclose(np.log10(ax.get_ylim()), (-0.15, 3.15))
    mine = [ax.get_xlim() + ax.get_ylim() for ax in axes]
    shared_fig, shared = plt.subplots(1, 2, sharex=True, sharey=True)
    draw(shared)
    assert np.allclose(mine, [ax.get_xlim() + ax.get_ylim() for ax in shared], rtol=1e-12)
    plt.close(fig)
    plt.close(shared_fig)


def test_p_ticks_are_whole_numbers_on_a_small_machine():
    """A P axis of 2..4 (a machine of 4 cores) reads 2, 3, 4, not matplotlib's default 2.25, 2.5, 2.75."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([2, 4], [1, 2])
    assert not all(float(t).is_integer() for t in ax.get_xticks())  # the default locator
    ax.xaxis.set_major_locator(fg.p_ticks())
    assert [t for t in ax.get_xticks() if 2 <= t <= 4] == [2, 3, 4]
    plt.close(fig)
