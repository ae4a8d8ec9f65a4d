"""A moshi server that sends one corrupt Ogg page (its CRC no longer matches): the client records a protocol
violation and the sample is ineligible; libopus alone would decode the page and the sample would stay eligible."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.systems.net import moshi_wire as mw
from duplexeval.systems.net import server as server_module
from duplexeval.systems.net.moshi_server import MoshiServerSession
from tests.helpers.net_protocols import Scenario, run_batch

CORRUPT_AT = 6  # the 6th audio message the server sends (well inside the 2 s input)


class CorruptPageMoshiSession(MoshiServerSession):
    """The loopback moshi server, flipping one byte inside the body of its CORRUPT_AT-th Ogg page."""

    def deliver(self, at_s: float, message: str | bytes, tag: str | None = None, on_sent=None) -> None:  # type: ignore[no-untyped-def]
        if isinstance(message, bytes) and message[:1] == bytes((mw.Kind.AUDIO,)):
            self.audio_sent = getattr(self, "audio_sent", 0) + 1
            if self.audio_sent == CORRUPT_AT:
                page = bytearray(message)
                page[-3] ^= 0xFF  # the last bytes are Opus payload; the page's CRC now disagrees
                message = bytes(page)
        super().deliver(at_s, message, tag, on_sent)


def test_ogg_crc_is_rfc_3533_s() -> None:
    enc = mw.OpusEncoder()
    page = enc.encode_frame(bytes(2560))
    while page[:4] == b"OggS" and len(page) > 27:  # every page the encoder wrote carries a CRC that checks
        size = 27 + page[26] + sum(page[27 : 27 + page[26]])
        one = page[:size]
        assert mw.ogg_crc(one[:22] + b"\0\0\0\0" + one[26:]) == int.from_bytes(one[22:26], "little")
        page = page[size:]
    bad = bytearray(enc.encode_frame(bytes(2560)))
    bad[-1] ^= 1
    dec = mw.OpusDecoder()
    dec.feed(mw.OpusEncoder().encode_frame(bytes(2560)))
    with pytest.raises(mw.MoshiWireError, match="CRC mismatch"):
        dec.feed(bytes(bad))


@pytest.mark.slow
def test_a_corrupt_ogg_page_from_the_server_is_a_recorded_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(server_module.SERVER_PROTOCOLS, "moshi",
                        f"{__name__}:{CorruptPageMoshiSession.__name__}")
    out = run_batch([Scenario("corrupt", "moshi")], parallel=1)["corrupt"]
    violations = [r for r in out.records if r["dir"] == "recv" and "violation" in r]
    assert len(violations) == 1 and "CRC mismatch" in violations[0]["violation"]
    assert "protocol_violation" in out.reasons
    assert np.asarray(out.playout.audio).size > 0
