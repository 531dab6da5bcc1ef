"""OpenMPI 4.1's dynamic-rules files (``coll_tuned_dynamic_rules_filename``, classic format).

The file is a stream of integers: the number of collectives, then per collective its id (BCAST 7,
REDUCE 11 in ``coll_base_functions.h``), the number of communicator-size blocks, and per block its
smallest communicator size, the number of message-size rules and one line per rule: smallest
message size in bytes, algorithm, fan-in/out, segment size. OpenMPI uses the last block whose size
is <= the communicator's and the last rule whose size is <= the message's; algorithm 0 falls back
to the fixed rules.

OpenMPI's reader skips every character that is not a digit and drops a file it dislikes without a
word (a release build prints nothing), falling back to its fixed rules: :func:`validate` is the
check it does not give.
"""

from __future__ import annotations

import re

from collat import InputError
from collat.model.shapes.openmpi import ALGORITHM_COUNT, COLLECTIVE_COUNT, COLLECTIVE_IDS  # noqa: F401 (OpenMPI's ids)


def write_rules(per_collective: dict[str, list]) -> str:
    """The rules file text for {operation: blocks} (no comments: the v4.1 reader skips every
    non-digit character, so free text with digits would corrupt it)."""
    lines = [str(len(per_collective))]
    for op, blocks in per_collective.items():
        lines += [str(COLLECTIVE_IDS[op]), str(len(blocks))]
        for comm_size, rules in blocks:
            lines += [str(comm_size), str(len(rules))]
            lines += [" ".join(str(v) for v in r) for r in rules]
    return "\n".join(lines) + "\n"


def parse_rules(text: str) -> dict[int, list[tuple[int, list[tuple[int, int, int, int]]]]]:
    """Read a rules file back: {collective id: [(comm size, [(msg size, alg, faninout, segsize)])]}.
    Assumes a well-formed file (:func:`validate` checks one)."""
    tokens = iter(int(t) for t in text.split())
    out = {}
    for _ in range(next(tokens)):
        cid = next(tokens)
        blocks = []
        for _ in range(next(tokens)):
            comm = next(tokens)
            rules = [tuple(next(tokens) for _ in range(4)) for _ in range(next(tokens))]
            blocks.append((comm, rules))
        out[cid] = blocks
    return out


def validate(text: str, path: str = "rules file") -> dict:
    """Parse a rules file and check what OpenMPI 4.1 needs but does not report: only integers,
    known collective ids (once each), algorithms in range, at least one block per collective and one
    rule per block, increasing communicator sizes, every block's first rule at message size 0,
    increasing message sizes, non-negative fan-in/out and segment size, nothing left over. Returns
    :func:`parse_rules`'s structure; raises :class:`collat.InputError` naming the line."""
    tokens: list[tuple[int, int]] = []  # (value, line)
    for number, line in enumerate(text.splitlines(), 1):
        stray = re.sub(r"[0-9\s]", "", line)
        if stray:
            raise InputError(path, number, "only unsigned integers (OpenMPI skips other characters silently)", stray)
        tokens += [(int(t), number) for t in line.split()]
    pos = 0
    last_line = len(text.splitlines())

    def take(what):
        nonlocal pos
        if pos >= len(tokens):
            raise InputError(path, last_line, what, "end of file")
        value, line = tokens[pos]
        pos += 1
        return value, line

    out = {}
    n_coll, line = take("the number of collectives")
    if not 1 <= n_coll <= COLLECTIVE_COUNT:
        raise InputError(path, line, f"a number of collectives in 1..{COLLECTIVE_COUNT}", str(n_coll))
    for _ in range(n_coll):
        cid, line = take("a collective id")
        if cid not in ALGORITHM_COUNT:
            raise InputError(path, line, f"a collective id among {sorted(ALGORITHM_COUNT)} (bcast 7, reduce 11)", str(cid))
        if cid in out:
            raise InputError(path, line, f"collective {cid} once", "a second block list")
        n_blocks, line = take("the number of communicator-size blocks")
        if n_blocks < 1:
            raise InputError(path, line, "at least one communicator-size block", str(n_blocks))
        blocks, previous = [], 0
        for _ in range(n_blocks):
            comm, line = take("a communicator size")
            if comm < 1 or comm <= previous:
                raise InputError(path, line, f"communicator sizes increasing from 1 (previous {previous})", str(comm))
            previous = comm
            n_rules, line = take("the number of message-size rules")
            if n_rules < 1:
                raise InputError(path, line, f"at least one message-size rule for communicator size {comm}", str(n_rules))
            rules, last_size = [], -1
            for r in range(n_rules):
                size, line = take("a message size")
                alg, _ = take("an algorithm")
                fan, _ = take("a fan-in/out")
                seg, _ = take("a segment size")
                if r == 0 and size != 0:
                    raise InputError(path, line, f"message size 0 in the first rule of communicator size {comm} "
                                     "(OpenMPI would drop the whole file)", str(size))
                if size <= last_size:
                    raise InputError(path, line, f"message sizes increasing (previous {last_size})", str(size))
                if alg >= ALGORITHM_COUNT[cid]:
                    raise InputError(path, line, f"an algorithm 0..{ALGORITHM_COUNT[cid] - 1} of collective {cid}", str(alg))
                last_size = size
                rules.append((size, alg, fan, seg))
            blocks.append((comm, rules))
        out[cid] = blocks
    if pos != len(tokens):
        raise InputError(path, tokens[pos][1], "the end of the file", str(tokens[pos][0]))
    return out


def lookup(blocks, P: int, size: int) -> int:
    """The algorithm OpenMPI takes from parsed blocks: last block with comm size <= P, last rule with
    message size <= size (0 = its fixed rules)."""
    chosen = None
    for comm, rules in blocks:
        if comm <= P:
            chosen = rules
    if chosen is None:
        return 0
    alg = 0
    for msg, a, _, _ in chosen:
        if msg <= size:
            alg = a
    return alg
