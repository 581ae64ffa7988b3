"""pypto.ir.filecheck: each directive's rule, in both directions, and what a failure shows."""

import pytest

from pypto.ir.filecheck import CheckFailure, filecheck

TEXT = """\
def cube(self, a):
    a_mat = pl.tile.load(a, [0, 0])  # Mat[0x0, +65536]
    acc_1 = pl.tile.matmul(a_mat, a_mat)

    pl.tpush_to_aiv(acc_1)
def vector(self, out):
    t = pl.tpop_from_aic()
    pl.tile.store(t, [0, 0], out)
"""


def fails(checks: str) -> str:
    with pytest.raises(CheckFailure) as info:
        filecheck(TEXT, checks)
    return str(info.value)


def test_check_finds_patterns_in_order_and_not_out_of_order():
    filecheck(TEXT, "CHECK: pl.tile.load\nCHECK: pl.tile.matmul\nCHECK: pl.tile.store")
    message = fails("CHECK: pl.tile.matmul\nCHECK: pl.tile.load")
    assert message.startswith("CHECK: pl.tile.load (checks line 2): no match in the rest of the text")


def test_check_next_wants_the_very_next_line():
    filecheck(TEXT, "CHECK: pl.tile.load\nCHECK-NEXT: pl.tile.matmul")
    message = fails("CHECK: pl.tile.load\nCHECK-NEXT: pl.tpush_to_aiv")
    assert "no match on input line 3, the line after the last match" in message


def test_check_same_stays_on_the_line_after_the_last_match():
    filecheck(TEXT, "CHECK: pl.tile.load(a\nCHECK-SAME: # Mat[0x0, +65536]")
    assert "no match on input line 2 after the last match" in fails("CHECK: a_mat =\nCHECK-SAME: a_mat")


def test_check_empty_wants_an_empty_next_line():
    filecheck(TEXT, "CHECK: pl.tile.matmul\nCHECK-EMPTY:\nCHECK-NEXT: pl.tpush_to_aiv")
    assert "input line 2 is not empty" in fails("CHECK: def cube\nCHECK-EMPTY:")


def test_check_not_looks_only_between_its_neighbours():
    filecheck(TEXT, "CHECK: def cube\nCHECK-NOT: tpop\nCHECK: def vector")
    message = fails("CHECK: def cube\nCHECK-NOT: pl.tile.matmul\nCHECK: pl.tpush_to_aiv")
    assert message.startswith(
        "CHECK-NOT: pl.tile.matmul (checks line 2): found on input line 3, after CHECK:"
    )
    assert "matching stopped at input line 3, column 13" in message


def test_a_trailing_check_not_looks_to_the_end_of_its_block():
    filecheck(TEXT, "CHECK-LABEL: def cube\nCHECK-NOT: tpop\nCHECK-LABEL: def vector")
    assert "and the end of its block" in fails("CHECK-LABEL: def vector\nCHECK-NOT: store")


def test_labels_confine_the_checks_after_them_to_their_block():
    filecheck(
        TEXT, "CHECK-LABEL: def cube\nCHECK: pl.tile.load\nCHECK-LABEL: def vector\nCHECK: pl.tile.store"
    )
    # The store is in the vector block, so the cube block does not find it.
    message = fails("CHECK-LABEL: def cube\nCHECK: pl.tile.store\nCHECK-LABEL: def vector")
    assert "no match in the rest of the block of CHECK-LABEL: def cube" in message


def test_a_missing_label_is_reported_with_the_closest_line():
    message = fails("CHECK-LABEL: def cube\nCHECK-LABEL: def vectors(self")
    assert "CHECK-LABEL: def vectors(self (checks line 2): no match after input line 1" in message
    assert "the closest line in the range searched:\n     6 | def vector(self, out):" in message


def test_spaces_match_any_run_of_spaces_but_not_none():
    filecheck(TEXT, "CHECK: acc_1   =   pl.tile.matmul(a_mat,  a_mat)")
    fails("CHECK: acc_1=pl.tile.matmul")


def test_regexes_and_captured_variables():
    filecheck(TEXT, "CHECK: [[ACC:acc_[0-9]+]] = pl.tile.matmul\nCHECK: pl.tpush_to_aiv([[ACC]])")
    filecheck(TEXT, "CHECK: pl.tile.load(a, [{{[0-9]+}}, 0])")
    message = fails("CHECK: [[T:a_mat]] = \nCHECK: pl.tpush_to_aiv([[T]])")
    assert "captured: [[T]]='a_mat'" in message


def test_a_failure_numbers_the_input_and_marks_where_matching_stopped():
    message = fails("CHECK: pl.tile.load\nCHECK-NEXT: pl.tile.add")
    assert "matching stopped at input line 3, column 1:\n     3 |     acc_1 = pl.tile.matmul" in message
    assert ">    3 |     acc_1 = pl.tile.matmul(a_mat, a_mat)" in message
    assert "     1 | def cube(self, a):" in message


@pytest.mark.parametrize(
    ("checks", "message"),
    [
        ("no directive here", "the checks hold no CHECK directive"),
        ("CHECK-NXT: load", "checks line 1: unknown directive CHECK-NXT:"),
        ("CHECK:", "checks line 1: CHECK: has no pattern"),
        ("CHECK-NEXT: def cube", "there is no match before it to be next to"),
        ("CHECK: pl.tpush_to_aiv([[ACC]])", "[[ACC]] is used before any [[ACC:...]] captured it"),
        ("CHECK: {{(}}", "bad regular expression"),
    ],
)
def test_malformed_checks_are_rejected(checks, message):
    assert message in fails(checks)


def test_directives_may_sit_in_comments_and_other_lines_are_ignored():
    filecheck(TEXT, "# the load comes first\n# CHECK: pl.tile.load\n// CHECK-NEXT: pl.tile.matmul")
