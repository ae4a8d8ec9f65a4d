"""FDB v1.5: how a full-duplex system handles speech that overlaps its own (four scenarios, one task).

The four subsets (user interruption, user backchannel, talking to another person, background speech) are
scored by the same official rules (behaviour judge, before/after prosody, timing intervals, paired t-test)
and by our unified rules; what good behaviour is differs per scenario (`scenarios.SCENARIOS`).
"""
