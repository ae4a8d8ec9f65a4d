"""The schema layer (duplexeval.schemas): every model turns ANY JSON value into a typed record or one
InputError line (never another exception), keeps extra keys where its format keeps them, and range-checks
numbers at load."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duplexeval.errors import InputError
from duplexeval.fdb.tasks.backchannel.groundtruth import IccGroundTruth
from duplexeval.fdb.tasks.interruption.annotation import InterruptAnnotation
from duplexeval.fdb.tasks.pause.annotation import PauseAnnotation
from duplexeval.fdb.tasks.turn_taking.annotation import TurnAnnotation
from duplexeval.schemas import MAX_TIME_S, check_number, is_safe_id, load, validate
from duplexeval.schemas.controller import ClipLine, PolicyFields
from duplexeval.schemas.eot import EOTPairRow
from duplexeval.schemas.fdb import (
    AsrFile,
    ManifestFile,
    OutputJson,
    SynthDatasetFile,
)

SHA = "a" * 64
VALID = {
    PauseAnnotation: [{"text": "[PAUSE]", "timestamp": [1.0, 2.0]}],
    TurnAnnotation: [{"text": "[TURN-TAKING]", "timestamp": [1.0, 1.4]}],
    InterruptAnnotation: [{"context": "a", "interrupt": "b", "timestamp": [1.0, 2.0]}],
    OutputJson: {"text": "hi", "chunks": [{"text": "hi", "timestamp": [0.5, None]}]},
    ManifestFile: {"kind": "duplexeval.fdb.tree", "schema_version": 1,
                   "dataset": {"name": "d", "declared": {"candor_turn_taking": 1}},
                   "samples": [{"subset": "candor_turn_taking", "id": "1", "T": 5.0, "eligible": True, "reasons": [],
                                "files": {"output.wav": SHA, "turn_taking.json": SHA}, "export": {"k": 1}}]},
    AsrFile: {"manifest_sha256": SHA, "backend": {"name": "x"},
              "samples": {"candor_turn_taking/1": {"status": "ok", "output.json": SHA, "error": None, "cut_s": 0.0}}},
    IccGroundTruth: {"0": [0.5, 0.5]},
    SynthDatasetFile: {"name": "mini", "declared": {"candor_turn_taking": 1},
                       "samples": [{"subset": "candor_turn_taking", "id": "1", "T": 3.0}]},
    EOTPairRow: {"true_turn_end_s": 1.0, "detector_commit_s": 1.2, "id": "a"},
    ClipLine: {"id": "c1", "n_frames": 50, "turn_probes": [[2.0, 0.0, None]], "yield_onsets": [1.0]},
    PolicyFields: {"endpoint_threshold": 0.5, "endpoint_mode": "head_only"},
}
MODELS = list(VALID)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _set(obj, path, value):
    if not path:
        return value
    out = copy.deepcopy(obj)
    cur = out
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return out


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_valid_examples_pass(model) -> None:
    validate(VALID[model], model, "f.json")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), value=json_values, where=st.integers(0, 40))
def test_any_mutation_is_a_record_or_one_line(model, value, where) -> None:
    """Replace any node of a valid object with any JSON value: a record, or one InputError line naming the file."""
    paths = list(_paths(VALID[model]))
    obj = _set(VALID[model], paths[where % len(paths)], value)
    try:
        validate(obj, model, "f.json")
    except InputError as exc:
        msg = str(exc)
        assert msg.startswith("f.json: ") and "\n" not in msg and len(msg) < 600


def test_extra_keys_are_kept_where_the_format_keeps_them() -> None:
    m = validate(VALID[ManifestFile], ManifestFile, "m.json")
    assert m.samples[0].model_extra == {"export": {"k": 1}}
    a = validate(VALID[AsrFile], AsrFile, "a.json")
    assert a.samples["candor_turn_taking/1"].model_extra == {"cut_s": 0.0}
    with pytest.raises(InputError, match="unknown field\\(s\\) bogus"):
        validate({**VALID[ClipLine], "bogus": 1}, ClipLine, "c.jsonl: line 1")
    with pytest.raises(InputError, match="unknown policy field\\(s\\) nope"):
        validate({"nope": 1}, PolicyFields, "p.json")


@pytest.mark.parametrize("value", [True, "1", float("nan"), float("inf"), 1e303, -1e303])
def test_times_are_strict_finite_and_in_range(value) -> None:
    obj = [{"text": "[PAUSE]", "timestamp": [0.0, value]}]
    with pytest.raises(InputError, match="pause.json: sample x/1: pause 0"):
        validate(obj, PauseAnnotation, "pause.json: sample x/1")
    with pytest.raises(InputError):
        check_number(value, "w", "t")


def test_values_are_kept_as_written() -> None:
    rec = validate([{"timestamp": [2, 1.5]}], PauseAnnotation, "p")
    assert rec.root[0].timestamp == [2, 1.5] and isinstance(rec.root[0].timestamp[0], int)
    assert check_number(MAX_TIME_S, "w", "t") == MAX_TIME_S


@pytest.mark.parametrize("sid, ok", [("1", True), ("a.b_c-9", True), ("1\n", False), ("a\tb", False), ("..", False),
                                     ("a/b", False), ("", False), ("é", False), ("x" * 129, False), (1, False)])
def test_ids_match_whole_string(sid, ok) -> None:
    assert is_safe_id(sid) is ok


def test_load_names_the_file_and_refuses_nan_literals(tmp_path) -> None:
    p = tmp_path / "pause.json"
    p.write_text('[{"timestamp": [1, NaN]}]')
    with pytest.raises(InputError, match=r"pause.json: NaN is not a number JSON allows"):
        load(p, PauseAnnotation)
    p.write_text(json.dumps([{"timestamp": [1, 2]}]))
    assert load(p, PauseAnnotation).spans() == [(1.0, 2.0)]
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())  # a BOM is dropped
    assert load(p, PauseAnnotation).spans() == [(1.0, 2.0)]
    assert math.isclose(MAX_TIME_S, 86400.0)
