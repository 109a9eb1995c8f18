"""A stand-in for torch on a machine whose GPU is broken: CUDA is never available."""
__version__ = "0.0+kforge-broken-gpu"


class cuda:
    @staticmethod
    def is_available():
        return False
