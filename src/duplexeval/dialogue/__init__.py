"""Duplex dialogue evaluation (spec 004, Wang et al. 2024): FTED, ir_mid / ir_end / MIR, PIR_mid,
PRR_mid, the paper's precision and recall, PRR per interruption reason and PRRavg.

Stages meet through files: ``synth`` (case set) -> ``run`` (decisions.jsonl, cases.jsonl) ->
``score`` (judgements.jsonl, dialogue.json). See docs/dialogue.md.
"""
