"""roundtrip_check: after each pass the printed program is parsed back and compared (the parser
and the comparison are given as callables; pypto.language and pypto.ir.structural_diff in use)."""

import passes_irbuild as irbuild
import pytest

from pypto.ir import Program, PyptoError, VerificationError, print_ir
from pypto.passes import PassContext, PassManager, default_pipeline, roundtrip_check


def _run(reparse, compare) -> Program:
    manager = PassManager(default_pipeline(), [roundtrip_check(reparse, compare)])
    return manager.run(irbuild.staged_program(), PassContext(irbuild.TARGET))


def test_each_pass_is_printed_reparsed_and_compared():
    seen: list[tuple[str, str]] = []

    def reparse(text: str) -> Program:
        seen.append(("parse", text))
        return irbuild.staged_program()

    def compare(made: Program, parsed: Program) -> str | None:
        seen.append(("compare", print_ir(made)))
        return None

    lowered = _run(reparse, compare)
    texts = [text for what, text in seen if what == "parse"]
    assert len(texts) == len(default_pipeline()) and texts[-1] == print_ir(lowered)
    assert [text for what, text in seen if what == "compare"] == texts


def test_a_difference_is_a_verification_error_naming_the_pass():
    def compare(made: Program, parsed: Program) -> str | None:
        return "kernel 'k' differs" if len(made.functions) > 1 else None

    with pytest.raises(VerificationError) as info:
        _run(lambda text: irbuild.staged_program(), compare)
    first = default_pipeline()[0].name
    assert info.value.message == (
        f"the program after pass 1 ({first}) parses back as a different program: kernel 'k' differs"
    )
    assert "VerificationLevel.BASIC" in (info.value.hint or "")


def test_text_that_does_not_parse_back_is_a_verification_error():
    def reparse(text: str) -> Program:
        raise PyptoError("unexpected indent")

    with pytest.raises(
        VerificationError, match=r"after pass 1 \(.*\) does not parse back: unexpected indent"
    ):
        _run(reparse, lambda made, parsed: None)


def test_without_verification_a_broken_program_passes_through():
    broken = Program("p", irbuild.staged_program().functions, "missing_entry")
    with pytest.raises(VerificationError, match="entry function 'missing_entry'"):
        PassManager([]).run(broken, PassContext(irbuild.TARGET))
    assert PassManager([], verify=False).run(broken, PassContext(irbuild.TARGET)) is broken
