"""A chat-completions server on 127.0.0.1 that replies from a script, for the judge tests of every family."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from duplexeval.fdb.official import judge as J

KEY = "sk-test-SECRET-4d1c9a"

GOOD = "Analysis: The reply addresses the interruption directly.\nI would rate the AI's response as 4"

class ScriptedServer:
    """ThreadingHTTPServer on 127.0.0.1:0; each POST takes the next scripted action."""

    def __init__(self, script: list[tuple[str, object]]):
        self.script = list(script)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output quiet
                pass

            def do_POST(self):  # noqa: N802
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(n))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                kind, arg = outer.script.pop(0) if outer.script else ("good", GOOD)
                if kind == "fn":  # reply computed from the request body
                    kind, arg = "good", arg(body)
                if kind == "slow":
                    time.sleep(float(arg))
                    kind, arg = "good", GOOD
                if kind == "status":
                    data = (
                        json.dumps(
                            {"error": {
                                "message": f"boom, your header was {self.headers.get('Authorization')}"}}).encode())
                    self.send_response(int(arg))
                elif kind == "redirect":
                    data = b""
                    self.send_response(307)
                    self.send_header("Location", str(arg))
                elif kind == "raw":
                    data = arg if isinstance(arg, bytes) else str(arg).encode()
                    self.send_response(200)
                else:  # good / unparsable text as the message content
                    data = (
                        json.dumps(
                            {"choices": [{"index": 0, "message": {"role": "assistant", "content": arg}}]}).encode())
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

def rate(j: J.Judge, tmp_path: Path, sid: str = "1"):
    d = tmp_path / "synthetic_user_interruption" / sid
    d.mkdir(parents=True, exist_ok=True)
    return j.rate(f"synthetic_user_interruption/{sid}", d, "tell me a story", "wait, what time is it", "it is noon")

def all_tree_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())
