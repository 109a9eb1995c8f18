import builtins

from .errors import OutOfResources
from .jit import KernelInterface


class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, pre_hook=None):
        self.kwargs = kwargs
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.pre_hook = pre_hook

    def all_kwargs(self):
        return dict(self.kwargs, num_warps=self.num_warps, num_stages=self.num_stages)

    def __str__(self):
        return ", ".join(["%s: %s" % kv for kv in self.kwargs.items()] +
                         ["num_warps: %d" % self.num_warps, "num_stages: %d" % self.num_stages])


class Autotuner(KernelInterface):
    def __init__(self, fn, arg_names, configs, key, reset_to_zero, restore_value, pre_hook=None,
                 post_hook=None, prune_configs_by=None, warmup=None, rep=None,
                 use_cuda_graph=False, do_bench=None):
        self.configs = configs or [Config({})]
        self.keys = key
        self.cache = {}
        self.arg_names = arg_names
        self.reset_to_zero = list(reset_to_zero or [])
        self.pre_hook = lambda kwargs, reset_only=False: 0
        if pre_hook:
            self.pre_hook = pre_hook
        elif self.reset_to_zero:
            def _pre_hook(kwargs, reset_only=False):
                for name in self.reset_to_zero:
                    buf = kwargs[name]
                    for i in range(len(buf)):
                        buf[i] = 0
            self.pre_hook = _pre_hook
        self.early_config_prune = (prune_configs_by or {}).get("early_config_prune")
        self.fn = fn
        self.base_fn = fn.fn
        self.bench_runs = 0

    def prune_configs(self, kwargs):
        if self.early_config_prune:
            return self.early_config_prune(self.configs, self.nargs, **kwargs)
        return self.configs

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        if len(self.configs) > 1:
            key = tuple(self.nargs.get(k) for k in self.keys)
            if key not in self.cache:
                timings = {}
                for i, config in enumerate(self.prune_configs(kwargs)):
                    # Like Triton's _bench: a meta-parameter both passed and set by a config.
                    conflicts = [k for k in kwargs if k in config.kwargs]
                    if conflicts:
                        raise ValueError("Conflicting meta-parameters: %s. Make sure that you "
                                         "don't re-define auto-tuned symbols." %
                                         ", ".join(conflicts))
                    full = dict(self.nargs, **kwargs, **config.all_kwargs())
                    self.pre_hook(full)
                    try:
                        self.fn.run(*args, **kwargs, **config.all_kwargs())
                        self.bench_runs += 1
                        timings[config] = float(len(self.configs) - i)
                    except OutOfResources:
                        timings[config] = float("inf")
                self.cache[key] = builtins.min(timings, key=timings.get)
                self.pre_hook(dict(self.nargs, **kwargs), reset_only=True)
            config = self.cache[key]
        else:
            config = self.configs[0]
        self.best_config = config
        if config.pre_hook is not None:
            config.pre_hook(dict(self.nargs, **kwargs, **config.all_kwargs()))
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return ret


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None):
    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value,
                         pre_hook=pre_hook, post_hook=post_hook,
                         prune_configs_by=prune_configs_by)
    return decorator
