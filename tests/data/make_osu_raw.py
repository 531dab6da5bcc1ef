"""Write the synthetic osu_latency logs of tests/data/osu_raw/ (the fresh-clone raw-log tests).

Not measurements: T = alpha + beta * m per channel (a made-up machine with the eager/rendezvous
switch at 128 KiB), times a deterministic +-3 % ripple, printed the way OSU 7.3 prints osu_latency
(header once, then `runs` sweeps concatenated, as a SLURM job that loops over runs writes them).

    .venv/bin/python tests/data/make_osu_raw.py
"""

from pathlib import Path

OUT = Path(__file__).parent / "osu_raw"
CHANNELS = {  # alpha (us), beta (us/B) below and from 128 KiB
    "core": ((0.25, 1.6e-4), (2.0, 7.0e-5)),
    "socket": ((0.5, 2.2e-4), (3.0, 9.0e-5)),
    "node": ((1.1, 1.0e-4), (6.0, 8.0e-5)),
}
SIZES = [2**k for k in range(23)]


def latency(channel: str, size: int, run: int) -> float:
    (a0, b0), (a1, b1) = CHANNELS[channel]
    alpha, beta = (a0, b0) if size < 131072 else (a1, b1)
    ripple = 1 + 0.03 * (((size.bit_length() * 7 + run * 3) % 5) - 2) / 2
    return (alpha + beta * size) * ripple


def main(runs: int = 4) -> None:
    OUT.mkdir(exist_ok=True)
    for channel in CHANNELS:
        lines = ["# OSU MPI Latency Test v7.3", "# Size          Latency (us)", "# Datatype: MPI_CHAR."]
        for run in range(runs):
            lines += [f"{size:<16}{latency(channel, size, run):>12.2f}" for size in SIZES]
        (OUT / f"synthetic-osu_latency-{channel}.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
