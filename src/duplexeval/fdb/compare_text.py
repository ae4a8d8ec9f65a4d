"""The compared metrics of compare.json as text: the cells of the table `fdb compare` prints and of the report's
comparison section (one formatting for both)."""

from __future__ import annotations

from typing import Any

from duplexeval.jsontypes import JsonObject


def _num(x: Any, digits: int = 3, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def _iv(iv: Any) -> str:
    if iv is None:
        return "—"
    return "[" + ", ".join("n/r" if v is None else f"{v:+.3f}" for v in iv) + "]"


def metric_cells(m: JsonObject) -> tuple[str, str, str, str, str, str]:
    """(A, B, B - A, interval, pairs, McNemar) cells of one compared metric; a not-reached median is `n/r`."""
    if m["kind"] == "median":
        a = "—" if m["a_reached"] is None else _num(m["a"]) if m["a_reached"] else "n/r"
        b = "—" if m["b_reached"] is None else _num(m["b"]) if m["b_reached"] else "n/r"
    else:
        a, b = _num(m["a"]), _num(m["b"])
    diff = _num(m["diff"], signed=True) if m["diff"] is not None else f"— ({m['reason']})" if m["reason"] else "—"
    mc = m.get("mcnemar")
    mcn = f"{mc['a_only']}/{mc['b_only']} p={mc['p_value']:.3g}" if mc else ""
    return a, b, diff, _iv(m["interval"]) if m["diff"] is not None else "—", str(m["n_pairs"]), mcn


def pairing_line(block: JsonObject) -> str:
    """Coverage, pairing counts and (interruption) the exercised-in-both breakdown of one subset."""
    p, ctx = block["pairing"], block["context"]
    cov = "/".join(_num((c or {}).get("coverage")) for c in (ctx["a"], ctx["b"]))
    parts = [f"eligible A {p['eligible_a']}, B {p['eligible_b']}, both {p['eligible_both']}", f"coverage A/B {cov}"]
    if "exercised" in p:
        e = p["exercised"]
        ex = "/".join(_num(((c or {}).get("exercised_rate") or {}).get("value")) for c in (ctx["a"], ctx["b"]))
        parts.append(f"exercised_rate A/B {ex}; exercised in both {e['both']}, only A {e['only_a']}, "
                     f"only B {e['only_b']}, neither {e['neither']}")
    parts.append(f"pairs {p['paired']} ({block['pairs_over']})")
    return "; ".join(parts)
