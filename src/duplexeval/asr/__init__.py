"""ASR backends behind one interface (`base.Backend`): whisper-align, faster-whisper, pocketsphinx, parakeet.

Build one with `duplexeval.asr.registry.make_backend(name, ...)` (a registered name, an entry point of
`duplexeval.asr_backends`, or `module.path:Class`); the FDB stage that runs them over a
tree is `duplexeval.fdb.asr_stage`. See docs/asr.md.
"""
