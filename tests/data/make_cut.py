"""Write the small cut of the study's published data kept in tests/data/orfeo-epyc-2024-cut/.

A fresh clone tests itself on this cut (the full files are not part of the repository). Run from
the repository root with the full data beside it:

    .venv/bin/python tests/data/make_cut.py ../shared/data/orfeo-epyc-2024

Rows are kept as they are (same columns, same text), only fewer of them: a few receivers per
channel, a few P values and sizes. SHA256SUMS of the cut is rewritten.
"""

import hashlib
import sys
from pathlib import Path

import pandas as pd

OUT = Path(__file__).parent / "orfeo-epyc-2024-cut"
KEEP = {
    "p2p.csv": {"recv": [0, 1, 2, 4, 20, 63, 64, 80, 95, 127]},
    "nbft.csv": {"p": [2, 3, 4, 10, 30, 61, 65, 129, 257], "size": [1, 16, 1024, 16384, 131072, 1048576]},
    "nbft_reduce.csv": {"p": [2, 3, 4, 10, 30, 61, 65, 129], "size": [1, 16, 1024, 16384, 131072, 1048576]},
}
COLLECTIVE = {"cores": [2, 6, 10, 18, 34, 66, 130, 194, 254], "size": [1, 2, 1024, 65536]}


def main(full: Path) -> None:
    sums = []
    for name in ("p2p.csv", "nbft.csv", "nbft_reduce.csv", "bcast_core.csv", "bcast_socket.csv", "bcast_node.csv",
                 "reduce_core.csv", "reduce_socket.csv", "reduce_node.csv"):
        lines = (full / name).read_text().splitlines(keepends=True)
        df = pd.read_csv(full / name, dtype=str, keep_default_na=False, skip_blank_lines=False)
        keep = KEEP.get(name, COLLECTIVE)
        mask = pd.Series(True, index=df.index)
        for column, values in keep.items():
            mask &= pd.to_numeric(df[column], errors="coerce").isin(values)
        body = [lines[i + 1] for i in df.index[mask]]  # the original text of each kept row
        text = lines[0] + "".join(body)
        (OUT / name).write_text(text)
        sums.append(f"{hashlib.sha256(text.encode()).hexdigest()}  {name}\n")
        print(f"{name}: {len(body)} of {len(df)} rows")
    (OUT / "SHA256SUMS").write_text("".join(sums))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
