"""Files follow the umask (0644 under 022, 0640 under 027), whatever the temporary file's own 0600, except the
private ones that hold what a remote service sent (wire traces, request/answer logs and caches): 0600."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from duplexeval.jsonio import append_text, atomic_write_bytes, atomic_write_text, write_json

PRIVATE = {"trace.jsonl", "trace.pcm", "judge-log.jsonl", "rating.json"}


@pytest.fixture(params=[0o022, 0o027, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_every_writer_follows_the_umask_and_private_files_are_0600(tmp_path: Path, umask: int) -> None:
    write_json(tmp_path / "a.json", {})
    atomic_write_text(tmp_path / "b.txt", "x")
    atomic_write_bytes(tmp_path / "c.bin", b"x")
    append_text(tmp_path / "d.jsonl", "x\n")
    for name in ("a.json", "b.txt", "c.bin", "d.jsonl"):
        assert mode(tmp_path / name) == 0o666 & ~umask, name
    atomic_write_text(tmp_path / "a.json", "replaced", private=True)
    append_text(tmp_path / "e.jsonl", "x\n", private=True)
    assert mode(tmp_path / "a.json") == 0o600 and mode(tmp_path / "e.jsonl") == 0o600
    write_json(tmp_path / "a.json", {})  # rewritten as an ordinary file: the umask's mode again
    assert mode(tmp_path / "a.json") == 0o666 & ~umask


def test_a_network_tree_follows_the_umask_and_its_traces_are_private(tmp_path: Path) -> None:

    from duplexeval.fdb.export_stage import export
    from duplexeval.fdb.synth.write import build_dir
    from tests.helpers.net import SERVED
    from tests.helpers.systems import one_sample_dataset

    umask = 0o027  # not the usual 022: the mode comes from the umask, not from a fixed 0644
    old = os.umask(umask)
    try:
        ds = one_sample_dataset(tmp_path / "ds")
        export("loopback:protocol=ws-pcm,in_process=true,serve=" + SERVED.replace(",", ";"), ds, tmp_path / "tree",
               progress=False)
        build = build_dir(tmp_path / "synth", tmp_path)
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "tree").rglob("*") if p.is_file()]
    assert {"trace.jsonl", "trace.pcm", "manifest.json", "output.wav"} <= {p.name for p in files}
    for p in files:
        assert mode(p) == (0o600 if p.name in PRIVATE else 0o666 & ~umask), p
    for d in [p for p in (tmp_path / "tree").rglob("*") if p.is_dir()]:
        assert mode(d) == 0o777 & ~umask, d
    assert mode(build) == 0o777 & ~umask  # a synth build folder, before its rename
