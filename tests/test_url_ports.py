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


@pytest.mark.parametrize(("spec", "problem"), [
    ("loopback:protocol=openai-realtime,serve=silent,options=speed=abc", "--option speed=abc: not a valid value"),
    ("loopback:protocol=ws-pcm,serve=silent,faults=busy=abc", "--fault 'busy=abc': 'abc' is not a number"),
    ("loopback:protocol=ws-pcm,serve=silent,faults=error@x", "--fault 'error@x': 'x' is not a time in seconds"),
    ("openai-realtime:url=ws://127.0.0.1:8000/x,threshold=abc", "threshold='abc' is not a valid float"),
    ("openai-realtime:url=ws://127.0.0.1:8000/x,interrupt_response=maybe",
     "interrupt_response='maybe' is not a valid bool"),
    ("moshi:url=ws://127.0.0.1:8000/x,seed=abc", "seed='abc' is not a valid int"),
])
def test_wrongly_typed_faults_and_session_parameters_are_refused(spec: str, problem: str) -> None:
    with pytest.raises(InputError) as exc:
        make_system(spec)
    assert str(exc.value) == f"--system {spec!r}: {problem}"
