"""`serve moshi --flavor kyutai|rust|personaplex` against the upstream servers' definitions
(tests/helpers/upstream_moshi.py).

A raw websockets client checks what each flavor puts on the wire: the handshake bytes and what comes
before them, the skipped first frame, pages per message, queueing or not, and how the query and bad
client messages are answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import websockets

from duplexeval.errors import InputError
from duplexeval.systems.net import moshi_wire as mw
from duplexeval.systems.net.server import ServerThread, make_server
from tests.helpers import upstream_moshi as up
from tests.helpers.net_protocols import SERVED

KW: dict[str, Any] = {"compression": None, "ping_interval": None}


def _serve(flavor: str, go: Callable[[str], Awaitable[Any]], **options: str) -> Any:
    srv = make_server("moshi", SERVED, options={"flavor": flavor, **options})
    with ServerThread(srv) as th:
        return asyncio.run(go(th.url(mw.CHAT_PATH)))


async def _silent(ws: Any, enc: mw.OpusEncoder, n: int) -> None:
    for _ in range(n):
        await ws.send(mw.encode(mw.Kind.AUDIO, enc.encode_silence()))


async def _drain(ws: Any, wait_s: float = 0.4) -> list[bytes]:
    got = []
    try:
        while True:
            got.append(await asyncio.wait_for(ws.recv(), wait_s))
    except asyncio.TimeoutError:
        return got


def _pages(msg: bytes) -> tuple[int, int]:
    """(header pages, audio pages) of one audio message."""
    pages = mw.ogg_pages(msg[1:])
    heads = sum(mw.is_header_page(p) for p in pages)
    return heads, len(pages) - heads


def test_kyutai_flavor_handshake_skip_pages_and_queueing() -> None:
    async def go(url: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with websockets.connect(url, **KW) as ws:
            out["handshake"] = await ws.recv()
            enc = mw.OpusEncoder()
            await ws.send(b"\x09an unknown kind")  # logged and skipped by the Python server
            await ws.send(mw.encode(mw.Kind.TEXT, b"hello"))
            await _silent(ws, enc, 1)
            out["after_first"] = await _drain(ws)
            await _silent(ws, enc, 3)
            out["later"] = [bytes(m) for m in await _drain(ws)]
            second = await websockets.connect(url, **KW)  # upgraded, then waits for the lock: no 503
            out["queued"] = await _drain(second, 0.3)
        out["second_handshake"] = await asyncio.wait_for(second.recv(), 5)
        await second.close()
        return out

    out = _serve("kyutai", go)
    assert out["handshake"] == up.KYUTAI_HANDSHAKE
    assert out["after_first"] == []  # the first frame is the model's past (skipped)
    assert [m[0] for m in out["later"]] == [mw.Kind.AUDIO] * 3  # one message per later frame
    assert [_pages(m) for m in out["later"]] == [(2, 2), (0, 2), (0, 2)]  # the frame's two 40 ms pages
    assert out["queued"] == [] and out["second_handshake"] == up.KYUTAI_HANDSHAKE


def test_rust_flavor_metadata_first_nine_byte_handshake_one_page_per_message() -> None:
    async def go(url: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with websockets.connect(url + "?audio_seed=42&unknown_key=x", **KW) as ws:
            out["first"] = [await ws.recv(), await ws.recv()]
            other = await websockets.connect(url, **KW)  # side by side, no lock
            out["other"] = [await asyncio.wait_for(other.recv(), 5) for _ in range(2)]
            await other.close()
            enc = mw.OpusEncoder()
            await _silent(ws, enc, 2)
            out["audio"] = [bytes(m) for m in await _drain(ws)]
            await ws.send(b"\x09an unknown kind")  # MsgType::from_u8 fails: the backend's loop ends
            try:
                await asyncio.wait_for(ws.recv(), 5)
                out["closed"] = False
            except websockets.exceptions.ConnectionClosed:
                out["closed"] = True
        with pytest.raises(websockets.exceptions.InvalidStatus) as bad:
            await websockets.connect(url + "?audio_topk=many", **KW)
        out["bad_query"] = bad.value.response.status_code
        return out

    out = _serve("rust", go)
    meta, hs = out["first"]
    assert mw.decode(meta).kind is mw.Kind.METADATA and set(mw.decode(meta).metadata()) == up.RUST_METADATA_KEYS
    assert hs == up.RUST_HANDSHAKE and out["other"][1] == up.RUST_HANDSHAKE
    # no skipped frame: two frames give four 40 ms pages, one page per message, the headers with the first
    assert [_pages(m) for m in out["audio"]] == [(2, 1), (0, 1), (0, 1), (0, 1)]
    assert up.RUST_PAGES_PER_MESSAGE == 1 and out["closed"] and out["bad_query"] == 400


def test_personaplex_flavor_query_prompts_and_handshake_after_them() -> None:
    async def go(url: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, query in (("no_voice", "?text_prompt=hi"), ("unknown_voice", "?text_prompt=&voice_prompt=x.pt"),
                            ("seed", "?text_prompt=&voice_prompt=NATF2.pt&seed=42")):
            async with websockets.connect(url + query, **KW) as ws:
                try:
                    out[name] = await asyncio.wait_for(ws.recv(), 5)
                except websockets.exceptions.ConnectionClosed as exc:
                    out[name] = ("closed", exc.rcvd)  # no close frame: the handler raised after the upgrade
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with websockets.connect(url + "?text_prompt=You+enjoy+a+chat.&voice_prompt=NATF2.pt", **KW) as ws:
            out["handshake"] = await asyncio.wait_for(ws.recv(), 5)
            out["prompt_s"] = loop.time() - t0
            enc = mw.OpusEncoder()
            await _silent(ws, enc, 1)
            out["after_first"] = [bytes(m) for m in await _drain(ws)]
        return out

    out = _serve("personaplex", go, prompt_ms="300")
    assert out["no_voice"] == out["unknown_voice"] == out["seed"] == ("closed", None)
    assert up.PERSONAPLEX_SEED_IN_QUERY_FAILS
    assert out["handshake"] == up.PERSONAPLEX_HANDSHAKE and out["prompt_s"] >= 0.3
    assert up.PERSONAPLEX_SKIPPED_INPUT_FRAMES == 0 and [_pages(m) for m in out["after_first"]] == [(2, 2)]


def test_flavor_options_are_checked() -> None:
    with pytest.raises(InputError, match="--flavor 'triton'"):
        make_server("moshi", SERVED, options={"flavor": "triton"})
    with pytest.raises(InputError, match="prompt_ms"):
        make_server("moshi", SERVED, options={"prompt_ms": "-1"})
    with pytest.raises(InputError, match="unknown moshi server option"):
        make_server("moshi", SERVED, options={"lock": "no"})
