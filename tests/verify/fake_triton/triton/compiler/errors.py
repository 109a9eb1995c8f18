class CompilationError(Exception):
    pass


class CompileTimeAssertionFailure(CompilationError):
    pass
