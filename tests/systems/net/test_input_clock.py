"""The loopback servers' input clock (`systems.net.input_clock`): its origin rule and the start of the timed faults."""

from __future__ import annotations

import asyncio

import pytest

from duplexeval.systems.net import input_clock
from duplexeval.systems.net.input_clock import InputClock


def test_the_origin_is_the_earliest_arrival_minus_the_audio_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(input_clock.time, "monotonic", lambda: now[0])
    fired: list[tuple[str, float]] = []

    async def fire(kind: str, s: float) -> None:
        fired.append((kind, s))

    async def run() -> None:
        wake = asyncio.Event()
        clock = InputClock([("disconnect", 1.5), ("error", 2.0)], fire, wake)
        assert clock.t0 is None and clock.now_s() == 0.0 and clock.wait_s(3.0) == 0.0
        tasks = clock.heard(0.08)  # the first packet arrives late, at 100.0
        assert clock.t0 == 100.0 and wake.is_set() and len(tasks) == 2
        wake.clear()
        now[0] = 100.05  # the second one is on time for an origin of 99.97: the origin moves back
        assert clock.heard(0.08) == [] and clock.t0 == pytest.approx(99.97) and wake.is_set()
        wake.clear()
        now[0] = 100.5  # a late packet never moves the origin forward
        assert clock.heard(0.08) == [] and clock.t0 == pytest.approx(99.97) and not wake.is_set()
        assert clock.now_s() == pytest.approx(0.53) and clock.wait_s(1.0) == pytest.approx(0.47)
        await asyncio.gather(*tasks)

    asyncio.run(run())
    assert fired == [("disconnect", 1.5), ("error", 2.0)]  # started once, by the first packet
