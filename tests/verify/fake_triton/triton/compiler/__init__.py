from .compiler import ASTSource, CompiledKernel, compile, make_backend  # noqa: F401
from .errors import CompilationError, CompileTimeAssertionFailure  # noqa: F401
