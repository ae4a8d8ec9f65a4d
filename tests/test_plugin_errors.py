"""A user's own plugin (system, EOT detector, controller, dialogue system) that raises, exits, returns the wrong thing
or hangs: one line naming the plugin, the method and what happened, exit 2; `--debug` shows the traceback; in the
streaming loop a failing or hanging call is that sample's recorded error."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from duplexeval.cli import main
from duplexeval.errors import InputError
from duplexeval.plugins import DEBUG_ENV, PluginError
from tests.helpers.plugins import plugin_module
from tests.helpers.systems import Dataset, add_sample

SYSTEMS = '''
import asyncio, sys
from dataclasses import dataclass

class Quiet:
    async def push_input(self, frame, t): pass
    async def poll_output(self, t): return []
    async def close(self): pass

class ExitsInPush(Quiet):
    async def push_input(self, frame, t): sys.exit(3)

class HangsInPush(Quiet):
    async def push_input(self, frame, t): await asyncio.sleep(3600)

@dataclass(frozen=True)
class Agent:
    name: str = "agent"
    def params(self): return {}
    def version(self): return "1"
    async def open_session(self, info): return Quiet()

@dataclass(frozen=True)
class RaisesInInit(Agent):
    def __post_init__(self): raise RuntimeError("no GPU here")

@dataclass(frozen=True)
class ExitsInInit(Agent):
    def __post_init__(self): sys.exit(3)

@dataclass(frozen=True)
class ParamsRaise(Agent):
    def params(self): raise ValueError("params broke")

@dataclass(frozen=True)
class ParamsNotJson(Agent):
    def params(self): return {"model": object()}

@dataclass(frozen=True)
class ParamsNaN(Agent):
    def params(self): return {"gain": float("nan")}

@dataclass(frozen=True)
class ParamsList(Agent):
    def params(self): return [1, 2]

@dataclass(frozen=True)
class VersionRaise(Agent):
    def version(self): raise RuntimeError("no version")

@dataclass(frozen=True)
class VersionInt(Agent):
    def version(self): return 17

@dataclass(frozen=True)
class ExitInSession(Agent):
    async def open_session(self, info): return ExitsInPush()

@dataclass(frozen=True)
class ExitInOpen(Agent):
    async def open_session(self, info): sys.exit(4)

@dataclass(frozen=True)
class HangInOpen(Agent):
    async def open_session(self, info): await asyncio.sleep(3600)

@dataclass(frozen=True)
class HangInSession(Agent):
    async def open_session(self, info): return HangsInPush()
'''


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv(DEBUG_ENV, "")  # recorded as unset, so whatever `--debug` sets is undone after the test
    d = plugin_module(tmp_path, monkeypatch, "r3_systems", SYSTEMS)
    (d / "r3_broken_import.py").write_text("raise RuntimeError('missing weights at import')\n")
    (d / "r3_exit_import.py").write_text("import sys\nsys.exit(5)\n")
    yield "r3_systems"
    for mod in ("r3_systems", "r3_broken_import", "r3_exit_import"):
        sys.modules.pop(mod, None)


@pytest.fixture
def tiny(tmp_path: Path) -> Dataset:
    ds = Dataset("tiny", tmp_path / "ds")
    add_sample(ds, "candor_turn_taking", "1", np.zeros(16000, np.float32), [{"turn_end": 0.5}])
    add_sample(ds, "candor_turn_taking", "2", np.zeros(16000, np.float32), [{"turn_end": 0.5}])
    return ds


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    return int(exc.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize(("spec", "line"), [
    ("r3_broken_import:Agent",
     "system 'r3_broken_import:Agent': import raised RuntimeError: missing weights at import"),
    ("r3_exit_import:Agent", "system 'r3_exit_import:Agent': import called sys.exit(5)"),
    ("r3_systems:RaisesInInit", "system 'r3_systems:RaisesInInit': __init__ raised RuntimeError: no GPU here"),
    ("r3_systems:ExitsInInit", "system 'r3_systems:ExitsInInit': __init__ called sys.exit(3)"),
    ("r3_systems:ParamsRaise", "system 'r3_systems:ParamsRaise': params raised ValueError: params broke"),
    ("r3_systems:ParamsNotJson", "system 'r3_systems:ParamsNotJson': params returned a value that is not plain JSON "
                                 "(the value['model'] has type object)"),
    ("r3_systems:ParamsNaN", "system 'r3_systems:ParamsNaN': params returned a value that is not plain JSON "
                             "(the value['gain'] is nan)"),
    ("r3_systems:ParamsList", "system 'r3_systems:ParamsList': params returned list [1, 2], expected a dict of its "
                              "parameters"),
    ("r3_systems:VersionRaise", "system 'r3_systems:VersionRaise': version raised RuntimeError: no version"),
    ("r3_systems:VersionInt", "system 'r3_systems:VersionInt': version returned int 17, expected a version string"),
])
def test_a_system_plugin_failing_outside_the_loop_is_one_line_and_exit_2(
        plugins: str, tiny: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, line: str) -> None:
    from duplexeval.fdb.export_stage import export

    with pytest.raises(PluginError) as exc:
        export(spec, tiny, tmp_path / "t", progress=False)
    assert str(exc.value) == line
    assert not (tmp_path / "t" / "manifest.json").exists()


def test_the_cli_line_names_the_plugin_and_debug_shows_the_traceback(
        plugins: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["fdb", "export", "--system", "r3_systems:RaisesInInit", "--dataset", "demo", "--out", str(tmp_path / "t")]
    code, err = run_cli(args, capsys)
    assert code == 2
    assert err == ("duplexeval: error: system 'r3_systems:RaisesInInit': __init__ raised RuntimeError: no GPU here "
                   "(--debug shows the traceback)\n")
    code, err = run_cli([*args, "--debug"], capsys)
    monkeypatch.setenv(DEBUG_ENV, "")
    assert code == 2 and err.startswith("Traceback (most recent call last):")
    assert 'raise RuntimeError("no GPU here")' in err  # the plugin's own frame
    assert err.endswith("duplexeval: error: system 'r3_systems:RaisesInInit': __init__ raised RuntimeError: "
                        "no GPU here\n")
    monkeypatch.setenv(DEBUG_ENV, "1")
    code, err = run_cli(args, capsys)
    assert code == 2 and err.startswith("Traceback (most recent call last):")


@pytest.mark.parametrize(("spec", "error"), [
    ("r3_systems:ExitInSession", "PluginExit: push_input called sys.exit(3)"),
    ("r3_systems:ExitInOpen", "PluginExit: open_session called sys.exit(4)"),
    ("r3_systems:HangInOpen", "CallTimeout: open_session did not return within 0.2 s (--call-timeout)"),
    ("r3_systems:HangInSession", "CallTimeout: push_input did not return within 0.2 s (--call-timeout)"),
])
def test_a_session_that_exits_or_hangs_fails_that_sample_with_its_reason(
        plugins: str, tiny: Dataset, tmp_path: Path, spec: str, error: str) -> None:
    from duplexeval.fdb.export_stage import export
    from duplexeval.fdb.tree import load_manifest

    export(spec, tiny, tmp_path / "t", progress=False, call_timeout_s=0.2)
    manifest, _ = load_manifest(tmp_path / "t")
    assert [e.reasons for e in manifest.samples] == [["system_error"], ["system_error"]]
    assert [e.extra["export"]["error"] for e in manifest.samples] == [error, error]
    assert manifest.extra["export"]["call_timeout_s"] == 0.2


def test_call_timeout_is_checked(plugins: str, tiny: Dataset, tmp_path: Path) -> None:
    from duplexeval.fdb.export_stage import export

    with pytest.raises(InputError, match=r"^--call-timeout must be a number of seconds in \(0, 86400\], got nan$"):
        export("r3_systems:Agent", tiny, tmp_path / "t", progress=False, call_timeout_s=float("nan"))


# -- EOT detectors ---------------------------------------------------------------------------------
DETECTORS = '''
import sys

class Base:
    def __init__(self, **options): self.options = options
    def predict_batch(self, items): return [0.5] * len(items)

class RaisesInInit(Base):
    def __init__(self): raise RuntimeError("no model")

class ExitsInPredict(Base):
    def predict_batch(self, items): sys.exit(3)

class RaisesInPredict(Base):
    def predict_batch(self, items): raise KeyError("audio")

class ReturnsDict(Base):
    def predict_batch(self, items): return {"p": 1}

class AboveOne(Base):
    def predict_batch(self, items): return [1.5] * len(items)

class Negative(Base):
    def predict_batch(self, items): return [-0.25] * len(items)

class InfoRaises(Base):
    def info(self): raise RuntimeError("no info")

class InfoList(Base):
    def info(self): return ["v1"]

class InfoNotJson(Base):
    def info(self): return {"value": "1", "settings": {"w": object()}}
'''


@pytest.fixture
def detectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    plugin_module(tmp_path, monkeypatch, "r3_detectors", DETECTORS)
    yield "r3_detectors"
    sys.modules.pop("r3_detectors", None)


def _spans() -> object:
    from duplexeval.eot.spans import SpanSet, make_turn

    audio = np.concatenate([np.full(16000, 0.1, np.float32), np.zeros(16000, np.float32)])
    return SpanSet("tiny", "test", [make_turn("t1", audio, [(1.0, 1.5, "eot")])])


@pytest.mark.parametrize(("cls", "line"), [
    ("RaisesInInit", "EOT detector 'r3_detectors:RaisesInInit': __init__ raised RuntimeError: no model"),
    ("InfoRaises", "EOT detector 'r3_detectors:InfoRaises': info raised RuntimeError: no info"),
    ("InfoList", "EOT detector 'r3_detectors:InfoList': info returned list ['v1'], expected a dict"),
    ("InfoNotJson", "EOT detector 'r3_detectors:InfoNotJson': info returned a value that is not plain JSON "
                    "(the value['w'] has type object)"),
    ("ExitsInPredict", "tiny: turn 't1': EOT detector 'r3_detectors:ExitsInPredict': predict_batch called sys.exit(3) "
                       "(finished turns are kept; rerun to resume)"),
    ("RaisesInPredict", "tiny: turn 't1': EOT detector 'r3_detectors:RaisesInPredict': predict_batch raised KeyError: "
                        "'audio' (finished turns are kept; rerun to resume)"),
    ("ReturnsDict", "tiny: turn 't1': EOT detector 'r3_detectors:ReturnsDict': predict_batch returned dict {'p': 1}, "
                    "expected a list of scores (finished turns are kept; rerun to resume)"),
    ("AboveOne", "tiny: turn 't1': detector 'r3_detectors:AboveOne' returned 1.5 for turn 't1' at 1.0 s (need a "
                 "probability in [0, 1] or None) (finished turns are kept; rerun to resume)"),
    ("Negative", "tiny: turn 't1': detector 'r3_detectors:Negative' returned -0.25 for turn 't1' at 1.0 s (need a "
                 "probability in [0, 1] or None) (finished turns are kept; rerun to resume)"),
])
def test_a_detector_plugin_failing_is_one_line(detectors: str, tmp_path: Path, cls: str, line: str) -> None:
    from duplexeval.eot.predict_stage import predict

    out = tmp_path / "p.parquet"
    with pytest.raises(InputError) as exc:
        predict(_spans(), f"{detectors}:{cls}", {}, out, progress=False)  # type: ignore[arg-type]
    assert str(exc.value) == line
    assert not out.exists()


# -- controllers -----------------------------------------------------------------------------------
CONTROLLERS = '''
import sys

class Base:
    def reset(self): pass
    def step(self, user, agent, prev_state): return {"endpoint": 0.0}

class ExitsInInit(Base):
    def __init__(self): sys.exit(2)

class RaisesInStep(Base):
    def step(self, user, agent, prev_state): raise ZeroDivisionError("division by zero")

class ExitsInReset(Base):
    def reset(self): sys.exit(1)

class ConfigNotJson(Base):
    def config(self): return {"weights": b"raw"}
'''


@pytest.fixture
def controllers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    plugin_module(tmp_path, monkeypatch, "r3_controllers", CONTROLLERS)
    yield "r3_controllers"
    sys.modules.pop("r3_controllers", None)


def test_a_controller_plugin_failing_is_one_line(controllers: str) -> None:
    from duplexeval.controller.runtime.runner import load_controller, run

    with pytest.raises(PluginError, match=r"^controller 'r3_controllers:ExitsInInit': __init__ called sys.exit\(2\)$"):
        load_controller("r3_controllers:ExitsInInit")
    audio = np.zeros(3 * 1280, np.float32)
    with pytest.raises(PluginError, match=r"^controller 'r3_controllers:RaisesInStep': step raised ZeroDivisionError: "
                                          r"division by zero$"):
        run(load_controller("r3_controllers:RaisesInStep"), audio, None, 3, None)
    with pytest.raises(PluginError, match=r"^controller 'r3_controllers:ExitsInReset': reset called sys.exit\(1\)$"):
        run(load_controller("r3_controllers:ExitsInReset"), audio, None, 3, None)
    from duplexeval.controller.runtime.registry import controller_config

    with pytest.raises(PluginError, match=r"^controller 'r3_controllers:ConfigNotJson': config returned a value that "
                                          r"is not plain JSON \(the value\['weights'\] has type bytes\)$"):
        controller_config(load_controller("r3_controllers:ConfigNotJson"))


# -- dialogue systems ------------------------------------------------------------------------------
MANAGERS = '''
import sys

class Base:
    def reset(self, view): pass
    def on_event(self, event): return []

class ExitsInEvent(Base):
    def on_event(self, event): sys.exit(3)

class SettingsNotJson(Base):
    def settings(self): return {"model": {1, 2}}

class SettingsRaise(Base):
    def settings(self): raise RuntimeError("no settings")
'''


@pytest.fixture
def managers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    plugin_module(tmp_path, monkeypatch, "r3_managers", MANAGERS)
    yield "r3_managers"
    sys.modules.pop("r3_managers", None)


def _cases(tmp_path: Path) -> object:
    from duplexeval.dialogue.load import load_cases
    from duplexeval.dialogue.synth_stage import caseset_text

    p = tmp_path / "cases.jsonl"
    p.write_text(caseset_text(0, 2, 1), encoding="utf-8")
    return load_cases(p)


def test_a_dialogue_plugin_failing_is_one_line_or_that_case_s_recorded_error(managers: str, tmp_path: Path) -> None:
    from duplexeval.dialogue import run_stage
    from duplexeval.dialogue.simulator import Clock

    cases = _cases(tmp_path)
    with pytest.raises(PluginError, match=r"^dialogue system 'r3_managers:SettingsNotJson': settings returned a value "
                                          r"that is not plain JSON \(the value\['model'\] has type set\)$"):
        run_stage.run(cases, "r3_managers:SettingsNotJson", {}, Clock(), tmp_path / "a")  # type: ignore[arg-type]
    with pytest.raises(PluginError, match=r"^dialogue system 'r3_managers:SettingsRaise': settings raised "
                                          r"RuntimeError: no settings$"):
        run_stage.run(cases, "r3_managers:SettingsRaise", {}, Clock(), tmp_path / "b")  # type: ignore[arg-type]
    res = run_stage.run(cases, "r3_managers:ExitsInEvent", {}, Clock(), tmp_path / "c")  # type: ignore[arg-type]
    assert res.failures == len(res.rows) == 6
    errors = {r.error for r in res.rows}
    assert errors == {"dialogue system 'r3_managers:ExitsInEvent': on_event called sys.exit(3)"}


def test_the_chat_system_s_settings_are_checked_once_before_any_case(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from duplexeval.dialogue import run_stage
    from duplexeval.dialogue.simulator import Clock

    monkeypatch.setenv("R3_KEY", "k")
    cases = _cases(tmp_path)
    base = {"api_key_env": "R3_KEY", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    for change, line in [
        ({"model": ""}, "--system openai-chat: a model name is needed (model=...)"),
        ({"base_url": "ftp://example.org/v1"}, "--system openai-chat: base_url='ftp://example.org/v1' must be an "
                                               "http:// or https:// URL"),
        ({"max_attempts": "-1"}, "--system openai-chat: max_attempts=-1 must be 1..10"),
        ({"timeout_s": "-2"}, "--system openai-chat: timeout_s=-2 must be in (0, 600] s"),
        ({"max_tokens": "-5"}, "--system openai-chat: max_tokens=-5 must be 1..4096"),
    ]:
        with pytest.raises(InputError) as exc:
            run_stage.run(cases, "openai-chat", {**base, **change}, Clock(), tmp_path / "run")  # type: ignore[arg-type]
        assert str(exc.value) == line
        assert not (tmp_path / "run").exists()


def test_the_judge_s_attempts_error_names_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from duplexeval.dialogue.judges import make_judge

    monkeypatch.setenv("R3_KEY", "k")
    with pytest.raises(InputError, match=r"^--judge openai: attempts=0 must be 1\.\.10$"):
        make_judge("openai", tmp_path, model="m", base_url="http://127.0.0.1:9/v1", api_key_env="R3_KEY",
                   max_attempts=0)


def test_an_echoed_value_is_capped() -> None:
    err = InputError("x: " + "A" * 300_000 + " (hint at the end)")
    assert len(str(err)) < 1100 and str(err).endswith("(hint at the end)") and "characters cut" in str(err)
    assert json.dumps(str(err))  # still one printable line
    assert textwrap.dedent(str(err)).count("\n") == 0


@pytest.mark.parametrize("argv", [
    ["fdb", "X" * 100_000],  # click's usage error: an unknown command
    ["fdb", "export", "--system", "silent", "--dataset", "demo", "--out", "t", "--" + "X" * 100_000],  # unknown option
    ["report", "X" * 100_000, "--out", "r.html"],  # the OS refuses the name: the last-resort OSError line
])
def test_every_error_line_the_cli_prints_is_capped(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(argv, capsys)
    assert code == 2 and err.startswith("duplexeval: error: ") and err.count("\n") == 1
    assert len(err) < 1100, len(err)


def test_an_asr_backend_whose_signature_is_not_a_dict_is_one_line(tmp_path: Path) -> None:
    from duplexeval.fdb import asr_stage
    from tests.helpers.fdb import FixtureSample, turn_ann, write_tree

    class ListSignature:
        name = "mine"

        def signature(self) -> list:
            return ["v1"]

        def transcribe(self, audio16k, offset_s=0.0):  # noqa: ANN001, ANN201
            return []

    tree = write_tree(tmp_path / "t", [FixtureSample("candor_turn_taking", "1", 2.0, turn_ann(1.0), None)], asr=False)
    with pytest.raises(PluginError, match=r"^ASR backend 'mine': signature returned list \['v1'\], expected a dict$"):
        asr_stage.asr(tree, backend=ListSignature(), progress=False)  # type: ignore[arg-type]


def test_call_timeout_reaches_a_network_system_s_sessions(tiny: Dataset, tmp_path: Path) -> None:
    """A network system runs its samples through its own `run_sample` (replicas); --call-timeout bounds those calls
    too: with 1 ms the handshake cannot finish, and the sample records the timeout."""

    from duplexeval.fdb.export_stage import export
    from duplexeval.fdb.tree import load_manifest
    from tests.helpers.net import SERVED

    spec = "loopback:protocol=ws-pcm,serve=" + SERVED.replace(",", ";") + ",in_process=true"
    export(spec, tiny, tmp_path / "t", progress=False, call_timeout_s=0.001, subsets=["candor_turn_taking"], limit=1)
    manifest, _ = load_manifest(tmp_path / "t")
    (entry,) = manifest.samples
    assert (not entry.eligible
            and "CallTimeout: open_session did not return within 0.001 s" in entry.extra["export"]["error"])


# -- synchronous methods that never return ---------------------------------------------------------
HANGING = '''
import threading, time

class Detector:
    def predict_batch(self, items):
        time.sleep(3600)

class Controller:
    def reset(self): pass
    def step(self, user, agent, prev_state):
        while True:  # busy, and catching what it can: the bound still ends it
            try:
                sum(range(1000))
            except Exception:
                pass

class Manager:
    def reset(self, view): pass
    def on_event(self, event):
        threading.Event().wait()  # a lock wait: interruptible on the main thread

class Swallows(Manager):
    def on_event(self, event):
        try:
            time.sleep(3600)
        except BaseException:
            return []  # it returned, but only after the bound: still an error
'''


@pytest.fixture
def hanging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("DUPLEXEVAL_CALL_TIMEOUT", "0.1")
    plugin_module(tmp_path, monkeypatch, "r3_hanging", HANGING)
    yield "r3_hanging"
    sys.modules.pop("r3_hanging", None)


def test_a_synchronous_method_that_never_returns_is_bounded_per_call(hanging: str, tmp_path: Path) -> None:
    import time

    from duplexeval.controller.runtime.runner import load_controller, run
    from duplexeval.dialogue import run_stage
    from duplexeval.dialogue.simulator import Clock
    from duplexeval.eot.predict_stage import predict

    t0 = time.monotonic()
    with pytest.raises(InputError) as exc:
        predict(_spans(), "r3_hanging:Detector", {}, tmp_path / "p.parquet", progress=False)  # type: ignore[arg-type]
    assert str(exc.value) == ("tiny: turn 't1': EOT detector 'r3_hanging:Detector': predict_batch did not "
                              "return within 0.1 s (DUPLEXEVAL_CALL_TIMEOUT) (finished turns are kept; rerun to "
                              "resume)")
    with pytest.raises(PluginError, match=r"^controller 'r3_hanging:Controller': step did not return within 0.1 s "
                                          r"\(DUPLEXEVAL_CALL_TIMEOUT\)$"):
        run(load_controller("r3_hanging:Controller"), np.zeros(3 * 1280, np.float32), None, 3, None)
    cases = _cases(tmp_path)
    for cls in ("Manager", "Swallows"):  # each case is that case's recorded error; the run goes on
        res = run_stage.run(cases, f"r3_hanging:{cls}", {}, Clock(), tmp_path / cls)  # type: ignore[arg-type]
        assert res.failures == len(res.rows) == 6
        assert {r.error for r in res.rows} == {
            f"dialogue system 'r3_hanging:{cls}': on_event did not return within 0.1 s (DUPLEXEVAL_CALL_TIMEOUT)"}
    assert time.monotonic() - t0 < 60  # 14 bounded calls of 0.1 s, not an hour


def test_the_call_timeout_variable_is_checked_and_0_means_no_bound(hanging: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DUPLEXEVAL_CALL_TIMEOUT", "soon")
    code, err = run_cli(["controller", "bench", "r3_hanging:Controller", "--prefill", "0"], capsys)
    assert code == 2 and err.strip().splitlines()[-1] == (
        "duplexeval: error: DUPLEXEVAL_CALL_TIMEOUT='soon': expected seconds in [0, 86400] (0: no bound)")
    from duplexeval.plugins import call_timeout_s

    monkeypatch.setenv("DUPLEXEVAL_CALL_TIMEOUT", "0")
    assert call_timeout_s() is None
    monkeypatch.setenv("DUPLEXEVAL_CALL_TIMEOUT", "")
    assert call_timeout_s() == 120.0


def test_a_hanging_detector_through_the_cli_is_one_line_and_exit_2(hanging: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers.eot import write_eotbench_spans

    spans = write_eotbench_spans(tmp_path / "spans.jsonl")
    code, err = run_cli(["eot", "predict", "--spans", str(spans), "--detector", "r3_hanging:Detector",
                         "--out", str(tmp_path / "p.parquet"), "--no-progress"], capsys)
    assert code == 2, err
    assert "predict_batch did not return within 0.1 s (DUPLEXEVAL_CALL_TIMEOUT)" in err and "Traceback" not in err
