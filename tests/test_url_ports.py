"""A URL whose port is out of range or not a number (70000, abc, 0) is refused in one line when the system or the
endpoint is built, never accepted to fail later per sample, and never a traceback where the URL is shown."""

from __future__ import annotations

import pytest

from duplexeval.chat_http import ChatClient, sanitize_url
from duplexeval.errors import InputError
from duplexeval.systems.registry import make_system

BAD = ("70000", "abc", "0", "-1")


@pytest.mark.parametrize("port", BAD)
@pytest.mark.parametrize("system", ["ws-pcm", "openai-realtime", "moshi", "native-duplex", "telephony"])
def test_a_network_system_refuses_a_bad_port(system: str, port: str) -> None:
    url = f"ws://127.0.0.1:{port}/x"
    with pytest.raises(InputError, match=rf"url '{url}': the port must be a whole number in 1\.\.65535$"):
        make_system(f"{system}:url={url}")
    with pytest.raises(InputError, match=r"the port must be a whole number"):  # one bad replica among good ones
        make_system(f"{system}:url=ws://127.0.0.1:8000/x,{url}")
    make_system(f"{system}:url=ws://127.0.0.1:8000/x")


@pytest.mark.parametrize("port", BAD)
def test_a_chat_endpoint_refuses_a_bad_port(port: str) -> None:
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(InputError, match=rf"^base_url '{url}': the port must be a whole number in 1\.\.65535$"):
        ChatClient(url, "")
    assert sanitize_url(f"http://u:pw@127.0.0.1:{port}/v1?k=1") == url  # showing it never raises


def test_a_dialogue_judge_with_a_bad_port_is_one_line(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from duplexeval.dialogue.judges import make_judge

    monkeypatch.setenv("R3_KEY", "k")
    with pytest.raises(InputError, match=r"the port must be a whole number in 1\.\.65535$"):
        make_judge("openai", tmp_path, model="m", base_url="http://127.0.0.1:70000/v1", api_key_env="R3_KEY")
