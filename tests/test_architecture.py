"""The house's rules: floors by folder, imports only downward, no circles, small rooms, no page words in core."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "replay", "app", "batchviz")  # the packages, bottom floor first: each imports only those before it

# Each package's folders (or root modules), bottom floor first; a module may import only its own floor or lower.
FLOORS = {
    "core": [
        {"core/limits.py", "core/stats.py", "core/states.py"},
        {"core/workload", "core/kv"},
        {"core/clock"},
        {"core/sched"},
        {"core/engines", "core/batch", "core/measure"},
        {"core/chapter"},
        {"core/cli"},
        {"core/__init__.py", "core/__main__.py"},
    ],
    "app": [
        {"app/web"},
        {"app/server"},
        {"app/page"},
        {"app/simulator"},
        {"app/memory", "app/schedulers", "app/exercises", "app/quiz", "app/real_replay"},
        {"app/shell.py"},  # the whole page: the tabs under one shell
        {"app/export"},  # the served page as one offline file: it builds the shell's page
        {"app/main.py", "app/cli.py", "app/serve_setup.py", "app/server_gc.py", "app/__init__.py"},
    ],
}
MAX_MODULES = 15  # in one folder of product code


def _modules():
    """Return every product module's path and dotted name."""
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT)
            dotted = ".".join(rel.with_suffix("").parts)
            yield rel.as_posix(), dotted.removesuffix(".__init__")


MODULES = dict(_modules())
BY_NAME = {name: path for path, name in MODULES.items()}


def _imports(path: str) -> set[str]:
    """Return the product modules `path` imports anywhere in it (function-level imports included), by path."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {BY_NAME[n] for n in names if n in BY_NAME and BY_NAME[n] != path}


GRAPH = {path: _imports(path) for path in MODULES}


def _room(path: str) -> str:
    """Return the folder (or root module) a module stands in, as FLOORS names it."""
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else path


def _floor(path: str) -> tuple[int, int]:
    """Return (the package's floor, the room's floor inside it)."""
    package = path.split("/")[0]
    floors = FLOORS.get(package, [])
    inner = next((k for k, rooms in enumerate(floors) if _room(path) in rooms), 0)
    return PACKAGES.index(package), inner


def test_every_folder_of_core_and_app_has_a_floor():
    for package, floors in FLOORS.items():
        named = set().union(*floors)
        rooms = {_room(path) for path in MODULES if path.startswith(package + "/")}
        assert rooms == named, f"no floor: {sorted(rooms - named)}; a floor, no room: {sorted(named - rooms)}"


def test_imports_run_only_down_a_floor_or_within_one():
    """A package imports only packages below it; inside core and app a folder imports only its floor or below."""
    up = [f"{a} -> {b}" for a, deps in GRAPH.items() for b in deps if _floor(b) > _floor(a)]
    assert not up, "imports up a floor:\n" + "\n".join(sorted(up))


def test_no_module_imports_the_core_facade_from_inside_core():
    """`core/__init__.py` hands names on to outside users; inside core a module imports where a name lives."""
    inside = [a for a, deps in GRAPH.items() if a.startswith("core/") and "core/__init__.py" in deps]
    assert not inside, inside


def test_there_is_no_circle_of_imports():
    """No module reaches itself through the imports (Tarjan's strongly connected components, all of size one)."""
    index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not circles, circles


def test_no_folder_of_product_code_holds_more_than_15_modules():
    """Python modules and the page's ES modules alike (app/web/ and its folders)."""
    folders: dict[str, int] = {}
    scripts = [p.relative_to(ROOT).as_posix() for p in (ROOT / "app" / "web").rglob("*.js")]
    for path in [*MODULES, *scripts]:
        folder = path.rsplit("/", 1)[0]
        folders[folder] = folders.get(folder, 0) + 1
    crowded = {folder: n for folder, n in folders.items() if n > MAX_MODULES}
    assert not crowded, crowded


def test_nothing_cites_a_design_file_outside_the_repository():
    """The design is docs/design.md: no module, asset or doc points to a brief or a script kept outside the repo."""
    outside = ("DESIGN.md", "STYLE.md", "TOOLCHAIN.md", "shared/gpu/", "shared/chapter/")
    files = [p for p in ROOT.rglob("*") if p.suffix in {".py", ".js", ".md", ".html"} and p.is_file()]
    files = [p for p in files if not {".venv", "node_modules", ".git"} & set(p.relative_to(ROOT).parts)]
    cited = [
        f"{p.relative_to(ROOT)}: {name}"
        for p in files
        for name in outside
        if name in p.read_text(encoding="utf-8", errors="replace") and p.name != "test_architecture.py"
    ]
    assert not cited, cited


PAGE_WORDS = re.compile(r"colou?r|caption.*")  # a policy's page words (app/page/policy_words.py), not the core's
HEX_COLOUR = re.compile(r"#[0-9A-Fa-f]{6}\b")


def test_core_holds_no_page_words():
    """No class in core/ defines a colour or a caption, and no string in core/ is a hex colour: those are the page's.

    The command line says a policy by its label and summary; how the page paints and captions it lives in the app.
    """
    found = []
    for path in (p for p in MODULES if p.startswith("core/")):
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    targets = item.targets if isinstance(item, ast.Assign) else [getattr(item, "target", None)]
                    names = [t.id for t in targets if isinstance(t, ast.Name)]
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        names.append(item.name)
                    found += [f"{path}: {node.name}.{n}" for n in names if PAGE_WORDS.fullmatch(n)]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and HEX_COLOUR.search(node.value):
                found.append(f"{path}:{node.lineno}: {node.value[:40]!r}")
    assert not found, "\n".join(found)


MAX_FILE_LINES, MAX_FUNCTION_LINES = 400, 60  # a file a newcomer reads whole; a function on one screen


def test_no_product_file_over_400_lines_and_no_function_over_60():
    """Every Python and JavaScript file of core/, replay/, app/ and batchviz/ under 400 lines; functions <= 60."""
    long_files, long_functions = [], []
    for top in ("core", "replay", "app", "batchviz"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in (".py", ".js") or "__pycache__" in path.parts:
                continue
            text = path.read_text(encoding="utf-8")
            if text.count("\n") > MAX_FILE_LINES:
                long_files.append((str(path.relative_to(ROOT)), text.count("\n")))
            if path.suffix == ".py":
                for node in ast.walk(ast.parse(text)):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        length = node.end_lineno - node.lineno + 1
                        if length > MAX_FUNCTION_LINES:
                            long_functions.append((str(path.relative_to(ROOT)), node.name, length))
    assert long_files == [] and long_functions == []
