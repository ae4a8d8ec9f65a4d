"""The tree layer's run machinery: the one hash-checked read, the one resume journal, the one trace record."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb import verified
from duplexeval.fdb.run_journal import JournalEntry, ResumeJournal, run_hash
from duplexeval.fdb.sample_trace import (
    EXPORT_TRACE_KIND,
    IMPORT_TRACE_KIND,
    Trace,
    TraceHead,
    read_trace,
    write_trace,
)
from duplexeval.fdb.tree import SampleEntry
from duplexeval.fdb.verified import VerifyError, file_matches, read_verified, read_verified_json


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_read_verified_returns_the_bytes_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "a.json"
    f.write_bytes(b'{"x": 1}')
    reads: list[Path] = []
    real = Path.read_bytes

    def counting(self: Path) -> bytes:
        reads.append(self)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    monkeypatch.setattr(verified, "sha256_file", lambda p: pytest.fail("a second read of the file"))
    assert read_verified(f, _sha(b'{"x": 1}'), "s/1") == b'{"x": 1}'
    assert reads == [f]


@pytest.mark.parametrize("case", ["missing", "changed", "folder"])
def test_read_verified_one_error_type_and_one_shape(tmp_path: Path, case: str) -> None:
    f = tmp_path / "output.wav"
    if case == "changed":
        f.write_bytes(b"new bytes")
    elif case == "folder":
        f.mkdir()
    with pytest.raises(VerifyError) as exc:
        read_verified(f, _sha(b"old bytes"), "candor_turn_taking/7", "manifest.json")
    err = exc.value
    assert isinstance(err, InputError) and isinstance(err, RefusalError)  # callers catching either still do
    msg = str(err)
    assert msg.startswith(f"{f}: sample candor_turn_taking/7: ") and "\n" not in msg
    if case == "missing":
        assert msg.endswith("file not found") and err.digest is None
    elif case == "changed":
        assert "file differs from manifest.json" in msg and err.digest == _sha(b"new bytes")
        assert _sha(b"new bytes")[:12] in msg and _sha(b"old bytes")[:12] in msg
    else:
        assert "cannot read" in msg


def test_read_verified_without_a_recorded_hash_and_without_a_sample(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_bytes(b"[1]")
    assert read_verified(f, None) == b"[1]"
    with pytest.raises(VerifyError, match=rf"^{tmp_path / 'y.json'}: file not found$"):
        read_verified(tmp_path / "y.json", None)


def test_read_verified_json_names_file_and_sample(tmp_path: Path) -> None:
    f = tmp_path / "pause.json"
    f.write_bytes(b"\xef\xbb\xbf[1, 2]")  # a BOM is dropped, as jsonio.read_json does
    assert read_verified_json(f, _sha(f.read_bytes()), "p/1") == [1, 2]
    f.write_bytes(b"{bad")
    with pytest.raises(InputError, match=rf"^{f}: sample p/1: invalid JSON at line 1 column 2: "):
        read_verified_json(f, _sha(b"{bad"), "p/1")


def test_file_matches(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"abc")
    assert file_matches(f, _sha(b"abc"))
    assert not file_matches(f, _sha(b"abd"))
    assert not file_matches(tmp_path / "none", _sha(b"abc"))
    assert not file_matches(tmp_path, _sha(b"abc"))  # a folder is not the file


def _journal(tmp_path: Path, run: dict | None = None) -> ResumeJournal:
    return ResumeJournal(tmp_path / "j" / "run.json", run or {"tool": "t", "n": 1}, tmp_path / "j")


def test_journal_trusts_only_its_own_run_sample_input_and_intact_files(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    sdir = tmp_path / "s"
    sdir.mkdir()
    (sdir / "out").write_bytes(b"transcript")
    files = {"out": _sha(b"transcript")}
    good = JournalEntry(j.run_sha256, "sub", "1", "in-sha", files)
    assert j.trusts(good, "sub/1", "in-sha", sdir)
    assert not j.trusts(None, "sub/1", "in-sha", sdir)
    assert not j.trusts(JournalEntry(run_hash({"tool": "other"}), "sub", "1", "in-sha", files), "sub/1", "in-sha", sdir)
    assert not j.trusts(good, "sub/2", "in-sha", sdir)  # an entry copied into another sample's folder
    assert not j.trusts(good, "sub/1", "other-input", sdir)
    assert not j.trusts(JournalEntry(j.run_sha256, 1, "1", "in-sha", files), "1/1", "in-sha", sdir)
    assert not j.trusts(JournalEntry(j.run_sha256, "sub", "1", "in-sha", {3: "x"}), "sub/1", "in-sha", sdir)  # type: ignore[dict-item]
    (sdir / "out").write_bytes(b"changed")
    assert not j.trusts(good, "sub/1", "in-sha", sdir)


def test_journal_run_record_and_entries_round_trip(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    assert j.recorded_run() is None
    j.start()
    assert j.is_this_run(j.recorded_run())
    assert not _journal(tmp_path, {"tool": "t", "n": 2}).is_this_run(j.recorded_run())
    assert not j.is_this_run([1])
    j.write_entry("sub/1", "in-sha", {"out": "d"}, {"status": "ok"})
    e = j.read_entry("sub/1")
    assert e == JournalEntry(j.run_sha256, "sub", "1", "in-sha", {"out": "d"}, {"status": "ok"})
    assert json.loads(j.entry_path("sub/1").read_text())["subset"] == "sub"  # the entry names its own sample
    j.entry_path("sub/2").write_text('{"run_sha256": ')  # torn by a kill
    assert j.read_entry("sub/2") is None and j.read_entry("sub/3") is None
    j.clear()
    assert not (tmp_path / "j").exists()


def _entry(extra: dict) -> SampleEntry:
    return SampleEntry("candor_turn_taking", "1", 2.5, True, [], {"output.wav": "ab" * 32}, extra)


def test_trace_round_trips_export_and_import_shapes(tmp_path: Path) -> None:
    export = Trace(EXPORT_TRACE_KIND, TraceHead("r" * 64, "candor_turn_taking", "1", 2.5, 40000, "i" * 64, None, 39990),
                   _entry({"export": {"clock": "virtual"}}), {"input": {"frames": 32}, "items": [], "error": None})
    imported = Trace(IMPORT_TRACE_KIND, TraceHead("r" * 64, "candor_turn_taking", "1", 2.5, 40000, "i" * 64, "a" * 64),
                     _entry({"import": {}}))
    assert list(export.to_json()) == ["kind", "schema_version", "run_sha256", "subset", "id", "T", "n_samples",
                                      "input_sha256", "input_samples_16k", "annotation_sha256", "input", "items",
                                      "error", "result"]
    assert "input_samples_16k" not in imported.to_json() and list(imported.to_json())[-1] == "result"
    for t in (export, imported):
        write_trace(tmp_path, t)
        back = read_trace(tmp_path)
        assert back == t and back.to_json() == t.to_json()
        assert back.key == "candor_turn_taking/1" and back.journal_entry.files == t.result.files


@pytest.mark.parametrize("body", ["[]", '{"run_sha256": 1, "result": []}', '{"result": {}}', "{"])
def test_trace_of_the_wrong_shape_is_one_input_error(tmp_path: Path, body: str) -> None:
    (tmp_path / "trace.json").write_text(body)
    with pytest.raises(InputError, match=rf"^{tmp_path / 'trace.json'}: "):
        read_trace(tmp_path)
