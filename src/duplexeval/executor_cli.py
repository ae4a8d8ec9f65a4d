"""The one set of executor options for every per-sample command: ``@executor_options`` adds them to a command.

``--executor local|ray``, ``--ray-address``, ``--ray-num-cpus``, ``--ray-num-gpus``, ``--max-retries`` are
added to the decorated typer command's signature; the command receives them as one ``executor_spec:
ExecutorSpec`` keyword (its ``jobs`` is 1; a command with its own ``--jobs`` replaces it).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from duplexeval.executors import ExecutorSpec

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS: tuple[inspect.Parameter, ...] = (
    inspect.Parameter("executor", inspect.Parameter.KEYWORD_ONLY, annotation=str, default=typer.Option(
        "local", "--executor", help="Where per-sample work runs: local (this machine's processes) or ray "
                                    "(a Ray cluster; needs the duplexeval ray extra).")),
    inspect.Parameter("ray_address", inspect.Parameter.KEYWORD_ONLY, annotation=str | None, default=typer.Option(
        None, "--ray-address", help="With --executor ray: the cluster to join ('auto': the one `ray start` started "
                                    "for this machine, or HEAD_IP:6379); default: start a local Ray instance.")),
    inspect.Parameter("ray_num_cpus", inspect.Parameter.KEYWORD_ONLY, annotation=float, default=typer.Option(
        1.0, "--ray-num-cpus", min=0.0, help="With --executor ray: CPUs each worker reserves (it computes "
                                             "with 1 thread).")),
    inspect.Parameter("ray_num_gpus", inspect.Parameter.KEYWORD_ONLY, annotation=float, default=typer.Option(
        0.0, "--ray-num-gpus", min=0.0, help="With --executor ray: GPUs per worker for model stages "
                                             "(requested only when the cluster has a GPU).")),
    inspect.Parameter("max_retries", inspect.Parameter.KEYWORD_ONLY, annotation=int, default=typer.Option(
        2, "--max-retries", min=0, help="With --executor ray: retries of a sample whose worker died, each on a "
                                        "new worker; after that the sample is recorded as failed with the reason.")),
)
_NAMES = tuple(p.name for p in _OPTIONS)
DEFAULT_EXECUTOR = ExecutorSpec()  # the signature default of a decorated command (the decorator always passes one)


def spec_from_options(executor: str = "local", ray_address: str | None = None, ray_num_cpus: float = 1.0,
                      ray_num_gpus: float = 0.0, max_retries: int = 2, jobs: int = 1) -> ExecutorSpec:
    """The ExecutorSpec the options name (InputError, one line, when they are wrong or Ray is not installed)."""
    if executor == "ray":
        from duplexeval.executors_ray import import_ray

        import_ray()  # before any work: without the extra, one line saying how to install it
    return ExecutorSpec(kind=executor, jobs=jobs, ray_address=ray_address, ray_num_cpus=ray_num_cpus,
                        ray_num_gpus=ray_num_gpus, max_retries=max_retries)


def executor_options(fn: F) -> F:
    """Add the executor options to a typer command; it gets them as ``executor_spec``."""
    sig = inspect.signature(fn)
    if "executor_spec" not in sig.parameters:
        raise TypeError(f"{fn.__name__} needs an executor_spec parameter")
    kept = [p for name, p in sig.parameters.items() if name != "executor_spec"]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        opts = {name: kwargs.pop(name) for name in _NAMES if name in kwargs}
        return fn(*args, executor_spec=spec_from_options(**opts), **kwargs)

    wrapper.__signature__ = sig.replace(parameters=[*kept, *_OPTIONS])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k != "executor_spec"}
    wrapper.__annotations__.update({p.name: p.annotation for p in _OPTIONS})
    return wrapper  # type: ignore[return-value]
