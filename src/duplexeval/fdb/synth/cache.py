"""The built-in demo set, generated once and cached under a key of script, espeak-ng and generator version."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from duplexeval.fdb.synth.parse import Script, load_script
from duplexeval.fdb.synth.write import (
    SYNTH_VERSION,
    build_dir,
    replace_dir,
    verify,
    write_into,
)
from duplexeval.jsonio import sha256_bytes
from duplexeval.tts import espeak_version

DEMO_SCRIPT = Path(__file__).resolve().parent.parent.parent / "data" / "demo_script.yaml"


def cache_dir() -> Path:
    """`$DUPLEXEVAL_CACHE`, else `~/.cache/duplexeval`."""
    env = os.environ.get("DUPLEXEVAL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "duplexeval"


def demo_key(script: Script | None = None) -> str:
    """Cache key: script hash + espeak-ng version + generator version."""
    script = script or load_script(DEMO_SCRIPT)
    return sha256_bytes(f"{script.sha256}\n{espeak_version()}\n{SYNTH_VERSION}".encode())[:16]


def ensure_demo(force: bool = False, progress: bool = False) -> Path:
    """Path of the cached demo set; (re)generated atomically if missing, forced, or its files fail the recorded hash."""
    script = load_script(DEMO_SCRIPT)
    base = cache_dir()
    out = base / f"demo-{demo_key(script)}"
    if not force and verify(out):
        return out
    base.mkdir(parents=True, exist_ok=True)
    tmp = build_dir(out, base)
    try:
        write_into(script, tmp, progress=progress)
        if not force and verify(out):  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
            return out
        try:
            replace_dir(tmp, out)
        except OSError:
            if not verify(out):  # lost a race to a broken build: give up loudly
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
