"""The seed page's programs parse into the IR of Contract 1 (golden printed text)."""

from lang_golden import check_golden
from lang_kernels_seed import mixed, mixed_slots, staged

from pypto.ir import FunctionKind, ScopeStmt, SplitMode, print_ir


def test_staged_program_parses_to_two_scopes_with_tensor_ops_and_assemble():
    check_golden("staged.txt", print_ir(staged.parse()))


def test_step1_mixed_program_parses_to_one_split_scope():
    check_golden("mixed.txt", print_ir(mixed.parse()))


def test_cross_core_slot_fills_the_scope_slot_num():
    program = mixed_slots.parse()
    (scope,) = [s for s in program.entry_function.body if isinstance(s, ScopeStmt)]
    assert (scope.split, scope.slot_num, scope.name_hint) == (SplitMode.UP_DOWN, 4, "mixed")


def test_parsed_program_has_one_orchestration_function_named_after_the_entry():
    program = staged.parse()
    assert (program.name, program.entry) == ("staged", "staged")
    assert [(f.name, f.kind) for f in program.functions] == [("staged", FunctionKind.Orchestration)]
