"""Deep links: read `?mode=static&slots=6&seed=3&step=20` into state values, clamping or rejecting bad ones."""

from __future__ import annotations

import panel as pn
import param
from panel.io.location import Location

from core.limits import plain_int

# URL key -> SimState parameter
URL_KEYS = {
    "mode": "mode",
    "slots": "slots",
    "seed": "seed",
    "window": "window",  # before step: the window bounds the step
    "step": "step",
    "requests": "requests",
    "lengths": "lengths",
    "mean_tokens": "mean_tokens",
    "timeout": "batch_timeout",
    "arrival_window": "arrival_window",
    "priority_share": "priority_share",
    "both": "both",
    "clock": "clock",
    "accelerator": "accelerator",
    "model": "model_shape",
    "kv_blocks": "kv_blocks",
    "allocation": "allocation",
}
MAX_SHOWN = 40  # characters of a bad value repeated in a message
BOOLEANS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def query_value(raw) -> str:
    """Return a URL argument as text: the last value given, bytes decoded as UTF-8."""
    value = raw[-1] if isinstance(raw, list | tuple) else raw
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def query_choice(query: dict, key: str, allowed, kept: str) -> tuple[str | None, str]:
    """Return (a choice from the URL, or None, and a message): one of `allowed`, or refused naming them and `kept`."""
    if key not in query:
        return None, ""
    value = query_value(query[key]).strip()
    if value in allowed:
        return value, ""
    return None, f"URL: {key}={value[:40]!r} is not allowed (use {', '.join(allowed)}); {kept}."


def parse_query(query: dict, state: param.Parameterized) -> tuple[dict, list[str]]:
    """Return (values to set, messages) from URL arguments; out-of-range numbers are clamped, junk is rejected."""
    values, messages = {}, []
    for key, name in URL_KEYS.items():
        if key not in query:
            continue
        text = query_value(query[key]).strip()
        shown = repr(text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "...")
        p = state.param[name]
        if isinstance(p, param.Boolean):
            if text.lower() in BOOLEANS:
                values[name] = BOOLEANS[text.lower()]
            else:
                messages.append(f"URL: {key}={shown} is not allowed (use 1 or 0); kept {int(getattr(state, name))}.")
            continue
        if isinstance(p, param.Selector):
            if text in p.objects:
                values[name] = text
            else:
                messages.append(
                    f"URL: {key}={shown} is not allowed (use {' or '.join(p.objects)}); kept {getattr(state, name)}."
                )
            continue
        low, high = p.bounds
        if name == "step":
            high = values.get("window", state.window) - 1  # the window's last pass
        number = plain_int(text)  # plain ASCII digits only: no `1_6`, no other scripts' digits, no 5,000 digits
        if number is None:
            messages.append(
                f"URL: {key}={shown} is not a whole number (allowed {low}..{high}); kept {getattr(state, name)}."
            )
            continue
        clamped = min(max(number, low), high)
        if clamped != number:
            messages.append(f"URL: {key}={number} is out of range {low}..{high}; using {clamped}.")
        values[name] = clamped
    return values, messages


def query_of(state: param.Parameterized) -> dict[str, str]:
    """Return the URL arguments describing the state (only the keys that differ from the defaults, and the seed).

    The seed always: it tells generated traffic from the chapter's (the shell drops it for the chapter's). Nothing
    else at its default: another tab's change would write the simulator's settings (`mode=continuous&slots=4`).
    """
    out = {}
    for key, name in URL_KEYS.items():
        value = getattr(state, name)
        if value != state.param[name].default or key == "seed":
            out[key] = str(int(value)) if isinstance(value, bool) else str(value)
    return out


def safe_location():
    """Return (the session's Location or None, whether its address must be rewritten because Panel could not read it).

    Panel converts every all-digit query value with int(), which refuses numbers past 4,300 digits and would fail the
    page. `parse_query` refuses such a value with a message; here the session starts from a Location that reads such
    an address as having no query, and the app's first URL update writes a clean address.
    """
    try:
        return pn.state.location, False
    except ValueError:
        pn.state._locations[pn.state.curdoc] = SafeLocation()
        return pn.state.location, True


class SafeLocation(Location):
    """A Location whose query Panel cannot read (a number past Python's 4,300-digit int limit) reads as empty.

    The browser sends its address when the page connects; Panel's Location parses it on every change, and the
    plain one would log a traceback for that number each time.
    """

    @property
    def query_params(self) -> dict:
        """Return the address's arguments as Panel parses them, or none where Panel cannot parse them."""
        try:
            return super().query_params
        except ValueError:
            return {}


THEMES = ("light", "dark")


def parse_theme(query: dict) -> tuple[str, str]:
    """Return (theme, message) from the URL's `theme` argument: light (default) or dark."""
    if "theme" not in query:
        return "light", ""
    text = query_value(query["theme"]).strip().lower()
    if text in THEMES:
        return text, ""
    return "light", f"URL: theme={text!r} is not allowed (use light or dark); using light."
