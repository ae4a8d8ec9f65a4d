"""The four FDB v1.5 overlap scenarios: subset folder, published size, and what a good reply does afterwards."""

from __future__ import annotations

from dataclasses import dataclass

USER_INTERRUPTION = "user_interruption"
USER_BACKCHANNEL = "user_backchannel"
TALKING_TO_OTHER = "talking_to_other"
BACKGROUND_SPEECH = "background_speech"


@dataclass(frozen=True)
class Scenario:
    """One v1.5 subset: its folder name, published sample count, and the behaviour a good system shows.

    `expected` is our reading of the scenario (not an official field): "respond" means the system should stop
    and address the overlapping speech; "resume" means it should carry on with what it was saying.
    """

    subset: str
    title: str
    declared: int
    expected: str  # "respond" or "resume"


SCENARIOS: dict[str, Scenario] = {
    s.subset: s
    for s in (
        Scenario(USER_INTERRUPTION, "user interruption", 200, "respond"),
        Scenario(USER_BACKCHANNEL, "user backchannel", 99, "resume"),
        Scenario(TALKING_TO_OTHER, "talking to another person", 100, "resume"),
        Scenario(BACKGROUND_SPEECH, "background speech", 100, "resume"),
    )
}
SUBSET_ORDER: tuple[str, ...] = tuple(SCENARIOS)
