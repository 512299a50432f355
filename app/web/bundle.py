"""The page's JavaScript: app/web/'s ES modules, which import each other, joined into one module for a page.

Each file in app/web/ is a real module (node imports them for the parity tests); a page gets one module text, as
Panel's `_esm` and the exported page's single <script type="module"> need. Joining checks what each file imports:
a name must be exported by a file in the same bundle, so a renamed function fails here, not in a learner's browser.
"""

from __future__ import annotations

import posixpath
import re
from functools import cache
from pathlib import Path

ASSETS = Path(__file__).resolve().parent  # the web assets are package data beside this module
IMPORT = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"(\.\.?/[\w./-]+\.js)";[ \t]*\n', re.MULTILINE)
EXPORT = re.compile(r"^export\s+(?:async\s+)?(?:function\*?|const|let|class)\s+([A-Za-z_$][\w$]*)", re.MULTILINE)


def _resolved(name: str, spec: str) -> str:
    """Return the module a relative import in module `name` names, as a path under app/web/ (`charts/chart.js`)."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(name), spec))


def exports_of(name: str) -> set[str]:
    """Return the names module `name` (a file in app/web/) exports."""
    return set(EXPORT.findall((ASSETS / name).read_text(encoding="utf-8")))


@cache
def bundle(*names: str) -> str:
    """Return the modules `names` (paths under app/web/, in this order) as one module, imports checked and dropped.

    Raises ValueError naming the file and the import that no module in the bundle provides.
    """
    parts = []
    for name in names:
        text = (ASSETS / name).read_text(encoding="utf-8")
        for match in IMPORT.finditer(text):
            spec, source = match.group(2), _resolved(name, match.group(2))
            wanted = {n.strip() for n in match.group(1).split(",") if n.strip()}
            if source not in names:
                raise ValueError(f"app/web/{name} imports from {spec}, which is not in the bundle {names}")
            missing = wanted - exports_of(source)
            if missing:
                raise ValueError(f"app/web/{name} imports {sorted(missing)} from {spec}, which does not export them")
        parts.append(f"// ---- app/web/{name}\n" + IMPORT.sub("", text))
    return "\n".join(parts)
