"""Controllers by name through the shared registry: built-ins, `baseline:NAME`, `module.path:Name`, entry points,
errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from duplexeval.controller.runtime.baselines import SilenceTimeoutController, SileroController
from duplexeval.controller.runtime.registry import CONTROLLERS, load_controller
from duplexeval.controller.runtime.runner import run
from duplexeval.errors import InputError
from duplexeval.units import FRAME_SAMPLES
from tests.helpers.plugins import declare_entry_point, plugin_module

# A user's own controller: endpoint 1.0 on every frame quieter than `gate` (RMS), else 0.0.
PLUGIN = '''
import numpy as np

class GateController:
    name = "gate"

    def __init__(self, gate=0.01):
        self.gate = float(gate)

    def reset(self):
        pass

    def step(self, user, agent, prev_state):
        quiet = float(np.sqrt(np.mean(np.square(user, dtype=np.float64)))) < self.gate
        return {"endpoint": 1.0 if quiet else 0.0}

    def config(self):
        return {"gate": self.gate}

def broken(**options):
    raise RuntimeError("no weights here")
'''


@pytest.fixture()
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return plugin_module(tmp_path, monkeypatch, "my_ctl_plugin", PLUGIN)


def test_builtin_names_and_the_baseline_spelling() -> None:
    assert {"silence", "silero"} <= set(CONTROLLERS.names())
    assert isinstance(load_controller("silence"), SilenceTimeoutController)
    assert isinstance(load_controller("baseline:silero", {"timeout_s": 0.5}), SileroController)
    assert load_controller("silence", {"timeout_s": 0.7}).config() == load_controller(
        "baseline:silence", {"timeout_s": 0.7}).config()


def test_unknown_name_lists_what_is_available() -> None:
    for spec in ("nope", "baseline:nope"):
        with pytest.raises(InputError, match=rf"^unknown controller '{spec}'; available: silence, silero "
                                             r"\(expected NAME"):
            load_controller(spec)


def test_user_class_by_import_path_runs(plugin_dir: Path) -> None:
    ctl = load_controller("my_ctl_plugin:GateController", {"gate": 0.05})
    audio = np.concatenate([np.full(2 * FRAME_SAMPLES, 0.5, np.float32), np.zeros(FRAME_SAMPLES, np.float32)])
    res = run(ctl, audio, None, 3, None)
    assert res.endpoint is not None and res.endpoint.tolist() == [0.0, 0.0, 1.0]


def test_options_that_do_not_build_are_one_line(plugin_dir: Path) -> None:
    with pytest.raises(InputError, match=r"^controller 'my_ctl_plugin:GateController': __init__ raised TypeError: "
                                         r".*unexpected keyword argument 'k'"):
        load_controller("my_ctl_plugin:GateController", {"k": 1})
    with pytest.raises(InputError, match="RuntimeError: no weights here"):
        load_controller("my_ctl_plugin:broken")


def test_entry_point_of_an_installed_package(tmp_path: Path, plugin_dir: Path) -> None:
    """`[duplexeval.controllers] gate = my_ctl_plugin:GateController` makes `gate` a controller name on the CLI."""
    env = declare_entry_point(plugin_dir, "my-ctl-plugin", "duplexeval.controllers", "gate",
                              "my_ctl_plugin:GateController")
    assert CONTROLLERS.entry_point_group == "duplexeval.controllers"
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "duplexeval", "controller", "bench", "gate:gate=0.2",
           "--prefill", "4", "--updates", "5", "--repeats", "1", "--json", str(out)]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(out.read_text())
    assert (rep["controller"], rep["controller_spec"]) == ("gate", "gate")
    proc = subprocess.run([*cmd[:5], "nope"], check=False, capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    assert proc.stderr.startswith("duplexeval: error: unknown controller 'nope'; available: gate, silence, silero")
