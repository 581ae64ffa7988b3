"""The seed page's programs parse into the IR of Contract 1 (the printed lines that matter)."""

from lang_kernels_seed import mixed, mixed_slots, staged

from pypto.ir import FunctionKind, ScopeStmt, SplitMode, print_ir
from pypto.ir.filecheck import filecheck


def scope_ops(program):
    """Each top-level scope of the entry function: its name and the ops of its body."""
    scopes = [s for s in program.entry_function.body if isinstance(s, ScopeStmt)]
    return [(s.name_hint, [stmt.value.op for stmt in s.body]) for s in scopes]


def test_staged_program_parses_to_two_scopes_with_tensor_ops_and_assemble():
    program = staged.parse()
    assert scope_ops(program) == [
        ("cube_only", ["tensor.matmul"]),
        ("vector_only", ["tensor.add", "tensor.assemble"]),
    ]
    filecheck(
        print_ir(program),
        """
        CHECK-LABEL: def staged(
        CHECK:       with pl.at(level=pl.Level.CORE_GROUP, name_hint='cube_only'):
        CHECK-NEXT:  acc: pl.Tensor[[128, 128], pl.FP32] = pl.tensor.matmul(a, b, out_dtype=pl.FP32)
        CHECK-NEXT:  with pl.at(level=pl.Level.CORE_GROUP, name_hint='vector_only'):
        CHECK-NEXT:  add: pl.Tensor[[128, 128], pl.FP32] = pl.tensor.add(acc, bias)
        CHECK-NEXT:  pl.tensor.assemble(out, add, [0, 0])
        CHECK-NEXT:  return out
        """,
    )


def test_step1_mixed_program_parses_to_one_split_scope():
    program = mixed.parse()
    assert scope_ops(program) == [("mixed", ["tensor.matmul", "tensor.add", "tensor.assemble"])]
    filecheck(
        print_ir(program),
        """
        CHECK-LABEL: def mixed(
        CHECK:       with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint='mixed'):
        CHECK-NEXT:  acc: pl.Tensor[[128, 128], pl.FP32] = pl.tensor.matmul(a, b, out_dtype=pl.FP32)
        CHECK-NEXT:  add: pl.Tensor[[128, 128], pl.FP32] = pl.tensor.add(acc, bias)
        CHECK-NEXT:  pl.tensor.assemble(out, add, [0, 0])
        CHECK-NEXT:  return out
        """,
    )


def test_cross_core_slot_fills_the_scope_slot_num():
    program = mixed_slots.parse()
    (scope,) = [s for s in program.entry_function.body if isinstance(s, ScopeStmt)]
    assert (scope.split, scope.slot_num, scope.name_hint) == (SplitMode.UP_DOWN, 4, "mixed")


def test_parsed_program_has_one_orchestration_function_named_after_the_entry():
    program = staged.parse()
    assert (program.name, program.entry) == ("staged", "staged")
    assert [(f.name, f.kind) for f in program.functions.values()] == [("staged", FunctionKind.Orchestration)]
