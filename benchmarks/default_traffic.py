"""The app's default traffic over seeds 0-99, beside the old default and the chapter's aims (`./dev bench default`)."""

from __future__ import annotations

import argparse
from dataclasses import replace

from core import TrafficConfig
from core.chapter.chapter_default import default_shape

OLD = replace(TrafficConfig(), mean_tokens=10, tail=1.5, max_tokens=48)


def main(argv: list[str]) -> None:
    """Print the seeds 0-99 table for the default traffic and the one it replaced."""
    argparse.ArgumentParser(prog="./dev bench default", description=__doc__).parse_args(argv)
    print("12 requests over 18 steps, 4 slots, 64-step window, seeds 0-99")
    print(f"{'traffic':<40}{'cont. util':>11}{'static util':>12}{'static fewer':>13}{'cont. faster':>13}  chapter?")
    print(f"{'aim':<40}{'75-90%':>11}{'40-55%':>12}{'>= 90':>13}{'>= 70':>13}")
    new = TrafficConfig()
    rows = (
        ("old default: mean 10, sigma 1.5, cap 48", OLD),
        (f"default: mean {new.mean_tokens}, sigma {new.tail}, cap {new.max_tokens}", new),
    )
    for label, config in rows:
        s = default_shape(config)
        verdict = "yes" if s.meets_the_chapter() else "no"
        print(
            f"{label:<40}{s.continuous_utilisation_median:>11.1%}{s.static_utilisation_median:>12.1%}"
            f"{s.static_completes_fewer:>13}{s.continuous_latency_lower:>13}  {verdict}"
        )
