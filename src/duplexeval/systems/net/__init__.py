"""Network adapters: drive real voice agents over the wire, and loopback reference servers for them.

Modules (each has its contract in its docstring):
- `trace`: the wire trace (`trace.jsonl` + `trace.pcm`) and the pure verdict / received-items functions
  that export and `fdb replay` share.
- `transport`: websockets connect (bounded retries) and the receive task that stamps arrivals.
- `session`: `NetSystem` / `NetSession`, the base a protocol adapter subclasses.
- `server`, `faults`, `serve_cli`: `duplexeval serve PROTOCOL` with fault injection.
- `pcm`: streaming resampling and strict base64.
- Protocols: `ws_pcm`, `openai_realtime` (and `moshi`, `native_duplex` from their own modules).
"""
