"""pypto.ir — types, IR nodes, the op table, printer, verifier, diagnostics, targets, backends."""

from typing import TYPE_CHECKING

from pypto.ir.backend import Backend, RunReport, TaskEdge, TaskRecord
from pypto.ir.compile_options import BackendType, OptimizationStrategy, PassDumpLevel, VerificationLevel
from pypto.ir.compiling import MissingPackageError, compile
from pypto.ir.dtypes import DataType, dtype_from_torch_name, supported_torch_dtypes
from pypto.ir.equality import (
    assert_structural_equal,
    duplicate_bindings,
    structural_diff,
    structural_equal,
)
from pypto.ir.errors import (
    DeadlockError,
    ExtentError,
    LoopLimitError,
    LoopStepError,
    MemoryBudgetError,
    MemRefError,
    OutOfBoundsError,
    ParseError,
    PipeSetupError,
    PlatformError,
    PyptoError,
    RaceError,
    SourceSpan,
    SpecializationError,
    SSAViolationError,
    TextSyntaxError,
    TypeCheckError,
    UnsupportedDtypeError,
    VerificationError,
)
from pypto.ir.memory import Allocation, MemoryPlan, Reservation
from pypto.ir.nodes import (
    Assign,
    Break,
    Call,
    Const,
    Continue,
    DimExpr,
    DynDim,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    FunctionMap,
    If,
    Level,
    LoopKind,
    MemRefSlot,
    Param,
    ParamRef,
    Program,
    Return,
    ScopeStmt,
    SplitAivRegion,
    SplitMode,
    Stmt,
    TupleExpr,
    Var,
    While,
)
from pypto.ir.nodes import (
    FunctionKind as FunctionType,
)
from pypto.ir.ops import (
    OPS,
    AtomicType,
    CastMode,
    CmpType,
    CompactMode,
    OpSpec,
    PadValue,
    PipeType,
    TensorLayout,
    TileLayout,
    Unit,
    get_op,
    make_call,
)
from pypto.ir.printer import print_ir
from pypto.ir.target import MemorySpec, Target
from pypto.ir.tasks import AccessMode, Predicate
from pypto.ir.types import (
    ASYNC_EVENT,
    ASYNC_SESSION,
    HANDLES,
    INDEX,
    PREFETCH_CONTEXT,
    TASK_ID,
    UNIT,
    ArrayType,
    Direction,
    HandleType,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    TupleType,
    Type,
)
from pypto.ir.verifier import verify_function, verify_program

__version__ = "0.1.0"


if TYPE_CHECKING:
    from pypto.ir.compiling import PassManager as PassManager
else:

    def __getattr__(name: str) -> object:
        """``pypto.ir.PassManager`` is ``pypto.passes.PassManager``, imported on first use: the IR
        floor imports without pypto-passes installed."""
        if name == "PassManager":
            from pypto.ir.compiling import pass_manager_class

            return pass_manager_class()
        raise AttributeError(f"module 'pypto.ir' has no attribute {name!r}")


from pypto.ir.serial import SerializationError, deserialize, serialize

__all__ = [
    "ASYNC_EVENT",
    "ASYNC_SESSION",
    "HANDLES",
    "INDEX",
    "OPS",
    "PREFETCH_CONTEXT",
    "TASK_ID",
    "UNIT",
    "AccessMode",
    "Allocation",
    "ArrayType",
    "Assign",
    "AtomicType",
    "Backend",
    "BackendType",
    "Break",
    "Call",
    "CastMode",
    "CmpType",
    "CompactMode",
    "Const",
    "Continue",
    "DataType",
    "DeadlockError",
    "DimExpr",
    "Direction",
    "DynDim",
    "Eval",
    "Expr",
    "ExtentError",
    "For",
    "Function",
    "FunctionKind",
    "FunctionMap",
    "FunctionType",
    "HandleType",
    "If",
    "Level",
    "LoopKind",
    "LoopLimitError",
    "LoopStepError",
    "MemRefError",
    "MemRefSlot",
    "MemoryBudgetError",
    "MemoryPlan",
    "MemorySpace",
    "MemorySpec",
    "MissingPackageError",
    "OpSpec",
    "OptimizationStrategy",
    "OutOfBoundsError",
    "PadValue",
    "Param",
    "ParamRef",
    "ParseError",
    "PassDumpLevel",
    "PipeSetupError",
    "PipeType",
    "PlatformError",
    "Predicate",
    "Program",
    "PyptoError",
    "RaceError",
    "Reservation",
    "Return",
    "RunReport",
    "SSAViolationError",
    "ScalarType",
    "ScopeStmt",
    "SerializationError",
    "SourceSpan",
    "SpecializationError",
    "SplitAivRegion",
    "SplitMode",
    "Stmt",
    "Target",
    "TaskEdge",
    "TaskRecord",
    "TensorLayout",
    "TensorType",
    "TextSyntaxError",
    "TileLayout",
    "TileType",
    "TupleExpr",
    "TupleType",
    "Type",
    "TypeCheckError",
    "Unit",
    "UnsupportedDtypeError",
    "Var",
    "VerificationError",
    "VerificationLevel",
    "While",
    "assert_structural_equal",
    "compile",
    "deserialize",
    "dtype_from_torch_name",
    "duplicate_bindings",
    "get_op",
    "make_call",
    "print_ir",
    "serialize",
    "structural_diff",
    "structural_equal",
    "supported_torch_dtypes",
    "verify_function",
    "verify_program",
]
