"""The rules-file validator: what OpenMPI 4.1 would drop silently must be caught with file and line."""

import pytest

from collat import InputError
from collat.selection.rulesfile import lookup, parse_rules, validate, write_rules

# line 1: 2 collectives; 2: bcast (7); 3: 2 blocks; 4-7: P >= 2, 2 rules; 8-10: P >= 16, 1 rule;
# 11: reduce (11); 12: 1 block; 13-15: P >= 2, 1 rule
GOOD = write_rules({"bcast": [(2, [(0, 6, 0, 0), (1024, 1, 0, 0)]), (16, [(0, 2, 4, 0)])],
                    "reduce": [(2, [(0, 1, 0, 0)])]})


def test_good_file_round_trip():
    parsed = validate(GOOD, "f.txt")
    assert parsed == parse_rules(GOOD)
    assert lookup(parsed[7], 8, 1) == 6 and lookup(parsed[7], 8, 4096) == 1 and lookup(parsed[7], 20, 1) == 2
    assert lookup(parsed[7], 1, 1) == 0  # below the smallest communicator: the fixed rules


@pytest.mark.parametrize("edit, line, message", [
    (lambda t: t.replace("1024 1 0 0", "0 1 0 0", 1), 7, "message sizes increasing"),
    (lambda t: t.replace("16\n1\n0 2 4 0", "16\n1\n8 2 4 0", 1), 10, "message size 0 in the first rule"),
    (lambda t: t.replace("\n7\n", "\n8\n", 1), 2, "a collective id among"),
    (lambda t: t.replace("16\n1", "2\n1", 1), 8, "communicator sizes increasing"),
    (lambda t: t.replace("0 6 0 0", "0 12 0 0", 1), 6, "an algorithm 0..9"),
    (lambda t: t + "5\n", 16, "the end of the file"),
    (lambda t: t.rsplit("\n", 2)[0] + "\n", 14, "a message size, found 'end of file'"),
    (lambda t: "# rules for 256 ranks\n" + t, 1, "only unsigned integers"),
    (lambda t: t.replace("11\n1", "7\n1", 1), 11, "collective 7 once"),
])
def test_broken_files_are_caught_with_the_line(edit, line, message):
    bad = edit(GOOD)
    with pytest.raises(InputError, match=message) as e:
        validate(bad, "rules.txt")
    assert e.value.line == line and str(e.value).startswith(f"rules.txt, line {line}:")
