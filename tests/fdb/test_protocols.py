"""What `fdb export` / `fdb import` accept as a dataset (`fdb.selection.resolve_dataset`, `fdb.protocols`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from duplexeval.errors import InputError
from duplexeval.fdb.dataset import Dataset
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.import_stage import import_outputs
from duplexeval.fdb.protocols import DatasetLike, dataset_root
from duplexeval.fdb.selection import resolve_dataset
from tests.helpers.systems import Dataset as FixtureDataset


class NoName:
    """Has samples() and declared (what the old hasattr test looked for) but no name: not a dataset."""

    declared: dict[str, int] = {}

    def samples(self, subset: str | None = None) -> list[object]:
        return []


def test_dataset_objects_pass_through(tmp_path: Path) -> None:
    real = Dataset(name="d", root=tmp_path, declared={}, kind="synth", _samples=[])
    own = FixtureDataset("own", tmp_path)  # a caller's own class: `declared` is a property, no annotation hashes
    for ds in (real, own):
        assert isinstance(ds, DatasetLike)
        assert resolve_dataset(ds) is ds
        assert dataset_root(ds) == tmp_path


def test_paths_are_loaded(tmp_path: Path) -> None:
    for arg in (tmp_path / "missing", str(tmp_path / "missing")):
        with pytest.raises(InputError, match="dataset folder not found"):
            resolve_dataset(arg)


@pytest.mark.parametrize("bad", [5, NoName(), None])
def test_anything_else_is_a_type_error(bad: object, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=rf"dataset must be a folder path, 'demo' or an object with name, declared and "
                                        rf"samples\(\); got {type(bad).__name__}"):
        resolve_dataset(bad)
    with pytest.raises(TypeError, match="dataset must be"):
        export("silent", bad, tmp_path / "t", progress=False)
    with pytest.raises(TypeError, match="dataset must be"):
        import_outputs(bad, tmp_path, tmp_path / "u", progress=False)
    assert not (tmp_path / "t").exists() and not (tmp_path / "u").exists()  # refused before anything is written
