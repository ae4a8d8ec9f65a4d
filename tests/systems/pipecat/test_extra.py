"""The `pipecat` extra is installed the one documented way (`pip install 'duplexeval[pipecat]'`, one resolver
pass, nothing with --no-deps), and the resampler and sound-file library versions are the ones we sign."""

from __future__ import annotations

import importlib.metadata as md

import pytest
from packaging.requirements import Requirement

from duplexeval.audio import audio_library_versions
from duplexeval.systems.registry import make_system


def _requirements(dist: str, extras: tuple[str, ...] = ()) -> list[Requirement]:
    out = []
    for line in md.requires(dist) or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("", *extras)):
            out.append(req)
    return out


def _unmet(reqs: list[Requirement]) -> list[str]:
    bad = []
    for req in reqs:
        try:
            version = md.version(req.name)
        except md.PackageNotFoundError:
            bad.append(f"{req} (not installed)")
            continue
        if not req.specifier.contains(version, prereleases=True):
            bad.append(f"{req} (installed {version})")
    return bad


def test_the_pipecat_extra_is_installed_with_every_dependency_pipecat_declares() -> None:
    assert md.version("pipecat-ai") == "1.14.0"
    # duplexeval's own requirements with the pipecat extra, and pipecat-ai's with the extras we ask of it
    assert _unmet(_requirements("duplexeval", ("pipecat",))) == []
    assert _unmet(_requirements("pipecat-ai", ("websocket", "webrtc"))) == []


def test_the_audio_libraries_are_the_versions_we_sign() -> None:
    soxr, soundfile = md.version("soxr"), md.version("soundfile")
    ours = {r.name: r for r in _requirements("duplexeval")}
    theirs = {r.name: r for r in _requirements("pipecat-ai")}
    for name, version in (("soxr", soxr), ("soundfile", soundfile)):
        assert ours[name].specifier.contains(version) and theirs[name].specifier.contains(version), name
    import soundfile as sf
    import soxr as soxr_mod

    assert soxr_mod.__version__ == soxr and sf.__version__ == soundfile
    signed = audio_library_versions()
    assert signed.startswith(f"soxr {soxr}; soundfile {soundfile} (libsndfile ")
    # every system that resamples what it received signs them in its version (the manifest's record)
    for spec in ("telephony", "telephony:dialect=exotel", "pipecat-ws", "webrtc", "pipecat"):
        assert signed in make_system(spec).version(), spec


def test_the_webrtc_signature_names_aiortc_and_its_jitter_buffer() -> None:
    import aiortc

    from duplexeval.systems.net.webrtc_media import JB_CAPACITY, JB_PREFETCH

    version = make_system("webrtc").version()  # the manifest's system record
    assert f"aiortc {aiortc.__version__}" in version
    assert (
        f"receive jitter buffer capacity {JB_CAPACITY} prefetch {JB_PREFETCH} (about {JB_PREFETCH * 20} ms)" in version)
    import inspect

    from aiortc import rtcrtpreceiver

    # the settings are aiortc's own for audio (private to RTCRtpReceiver), which the client keeps
    assert f"JitterBuffer(capacity={JB_CAPACITY}, prefetch={JB_PREFETCH})" in inspect.getsource(rtcrtpreceiver)


@pytest.mark.parametrize("module", ["pipecat.serializers.twilio", "pipecat.serializers.protobuf",
                                    "pipecat.transports.websocket.fastapi", "pipecat.transports.smallwebrtc.transport",
                                    "pipecat.audio.vad.silero", "pipecat.audio.turn.smart_turn.local_smart_turn_v3"])
def test_the_pipecat_parts_the_reference_bot_uses_import(module: str) -> None:
    __import__(module)
